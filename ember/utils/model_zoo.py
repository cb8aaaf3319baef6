"""``ember.utils.model_zoo``: the older name of ``ember.hub.load_state_dict_from_url``."""

from ember.hub import load_state_dict_from_url as load_url

__all__ = ["load_url"]
