"""ember.contrib: stand-ins for third-party PyTorch libraries, built on ember."""
