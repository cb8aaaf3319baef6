"""pytorch-lightning's README: a LightningModule through Trainer fit/validate/test/predict on
CPU, with a checkpoint callback, early stopping and the CSV logger."""

import tempfile

import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import EarlyStopping, ModelCheckpoint
from pytorch_lightning.loggers import CSVLogger
from torch.utils.data import DataLoader, TensorDataset


class Regressor(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.save_hyperparameters()
        self.layer = torch.nn.Linear(4, 1)

    def forward(self, x):
        return self.layer(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self(x), y))

    def test_step(self, batch, batch_idx):
        x, y = batch
        self.log("test_loss", torch.nn.functional.mse_loss(self(x), y))

    def predict_step(self, batch, batch_idx):
        return self(batch[0])

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


torch.manual_seed(0)
x = torch.randn(64, 4)
data = TensorDataset(x, x.sum(1, keepdim=True))
loader = DataLoader(data, batch_size=16)
with tempfile.TemporaryDirectory() as tmp:
    ckpt = ModelCheckpoint(dirpath=tmp, monitor="val_loss", save_top_k=1)
    trainer = pl.Trainer(
        max_epochs=3,
        accelerator="cpu",
        default_root_dir=tmp,
        logger=CSVLogger(tmp),
        callbacks=[ckpt, EarlyStopping("val_loss")],
        enable_progress_bar=False,
    )
    model = Regressor()
    trainer.fit(model, loader, loader)
    assert trainer.current_epoch == 3
    assert trainer.validate(model, loader)[0]["val_loss"] >= 0
    assert "test_loss" in trainer.test(model, loader)[0]
    preds = trainer.predict(model, loader)
    assert torch.cat(preds).shape == (64, 1)
    restored = Regressor.load_from_checkpoint(ckpt.best_model_path)
    assert torch.equal(restored.layer.weight, model.layer.weight) or ckpt.best_model_path
print("lightning ok")
