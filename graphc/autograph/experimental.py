"""`gc.autograph.experimental`: where TF 2 code finds `do_not_convert`
(`tf.autograph.experimental.do_not_convert`); the same function as gc.autograph's."""
from .conversion import do_not_convert

__all__ = ["do_not_convert"]
