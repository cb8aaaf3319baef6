"""Ships ``ember-as-torch.pth`` into site-packages beside ember, for wheels and editable installs.

The ``.pth`` file is inert unless ``EMBER_AS_TORCH`` is set; then it makes ``import torch`` give
ember at interpreter start (ember/_standin.py), which is how child processes inherit
``python -m ember run``. setuptools has no declarative way to put a file at the root of
site-packages, so two commands are extended: ``build_py`` (wheels, ``pip install .``) copies it
into the build tree, and ``editable_wheel`` (``pip install -e .``) into the editable wheel.
"""

import os

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.editable_wheel import editable_wheel

PTH = "ember-as-torch.pth"


class BuildPyWithPth(build_py):
    def run(self):
        super().run()
        if not self.editable_mode:
            self.copy_file(PTH, os.path.join(self.build_lib, PTH))

    def get_outputs(self, include_bytecode=1):
        return [*super().get_outputs(include_bytecode), os.path.join(self.build_lib, PTH)]


class EditableWheelWithPth(editable_wheel):
    def _run_install(self, category):
        super()._run_install(category)
        if category == "data":  # the last step that writes into the unpacked wheel
            root = self.get_finalized_command("install").install_lib
            self.copy_file(PTH, os.path.join(root, PTH))


setup(cmdclass={"build_py": BuildPyWithPth, "editable_wheel": EditableWheelWithPth})
