"""skorch's README: NeuralNetClassifier fits and predicts like a scikit-learn estimator."""

import numpy as np
import torch
from sklearn.datasets import make_classification
from skorch import NeuralNetClassifier

X, y = make_classification(200, 20, n_informative=10, random_state=0)
X, y = X.astype(np.float32), y.astype(np.int64)


class Net(torch.nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Linear(20, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 2)
        )

    def forward(self, X):
        return self.body(X)


torch.manual_seed(0)
net = NeuralNetClassifier(
    Net,
    criterion=torch.nn.CrossEntropyLoss,
    max_epochs=10,
    lr=0.1,
    iterator_train__shuffle=True,
    verbose=0,
)
net.fit(X, y)
proba = net.predict_proba(X)
assert proba.shape == (200, 2) and np.allclose(proba.sum(1), 1, atol=1e-5)
assert (net.predict(X) == y).mean() > 0.7
assert len(net.history) == 10
print("skorch ok", (net.predict(X) == y).mean())
