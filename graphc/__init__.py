"""graphc: a tracing graph compiler for Python numeric code (`tf.function`, done better)."""
import warnings as _warnings

# numpy's floating-point RuntimeWarnings ("invalid value encountered in sin") raised where
# graphc's own op rules run: ops give inf/nan silently, as TF does. Users' own numpy code
# keeps its warnings (the filter matches warnings attributed to graphc's modules only).
_warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"graphc(\.|$)")
from . import config, errors, random
from .dtypes import DType, as_dtype, float32, float64, int32, int64, bool_ as bool  # noqa: A001
from .errors import RetracingWarning
from .runtime import ops as _ops
from .runtime.autodiff.tape import GradientTape, stop_gradient
from .runtime.autodiff.custom import custom_gradient, recompute_grad
from .runtime.concrete import ConcreteFunction
from .runtime.control_flow import cond, while_loop
from .runtime.dispatch import constant, convert_to_tensor
from .runtime.function import Function, function
from .runtime.signature import TensorSpec
from .runtime.tensor import Tensor
from .runtime.tensor_array import TensorArray
from .runtime.variables import Variable
from .runtime.module import Module

globals().update(_ops.PUBLIC)
from . import nn  # noqa: E402  (gc.nn builds on the ops above)
gelu = nn.gelu  # API.md names gelu among the ops as well
from . import math, linalg  # noqa: E402,A004  (gc.math, gc.linalg: TF's namespaces)
from . import debugging  # noqa: E402  (gc.debugging: check_numerics, assert_equal/less/greater)
from .functional_ops import map_fn, scan, foldl, foldr  # noqa: E402  (TF's higher-order fns)
from . import autograph  # noqa: E402,F401  (gc.autograph: to_code, to_graph, do_not_convert)
from .runtime.autodiff import control as _autodiff_control  # noqa: E402,F401  (gradient rules)
from . import optimizers  # noqa: E402  (gc.optimizers.SGD, Adam)
from . import train  # noqa: E402  (gc.train.Checkpoint, CheckpointManager, latest_checkpoint)
from . import saved_model  # noqa: E402  (gc.saved_model.save, load)
from . import summary  # noqa: E402  (gc.summary: TensorBoard; imports tensorboard lazily)
print = _ops.PUBLIC["print"]  # noqa: A001  (gc.print is the graph print)
from .runtime.ops.compat import executing_eagerly, is_tensor  # noqa: E402
from .runtime.static_value import static_value as get_static_value  # noqa: E402
newaxis = None   # x[gc.newaxis], as tf.newaxis

__version__ = "0.1.0"
