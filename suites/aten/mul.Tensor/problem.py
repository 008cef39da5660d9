"""aten::mul.Tensor: the ATen operator, called as the traced models call it.

Timed on the 4 most called distinct traced calls (SHAPE_CASES); checked on those and on 24 calls
that OpInfo samples (abs, acos, addcdiv, addcmul, aminmax, cdist, cos, digamma, div, erf, exp, lerp, lgamma, linalg.vector_norm, masked.prod, masked.var, matmul, max, mul, nan_to_num, native_group_norm, nn.functional.binary_cross_entropy, nn.functional.binary_cross_entropy_with_logits, nn.functional.cross_entropy, nn.functional.gaussian_nll_loss, nn.functional.margin_ranking_loss, pow, prod, reciprocal, remainder, rsqrt, sin, var) make (CHECK_CASES), and on GPUs on 48 of those again in bfloat16 or float16. Traced in: kernelevolve.aten.recipes:bart (forward), kernelevolve.aten.recipes:bart (train), kernelevolve.aten.recipes:beit (forward), kernelevolve.aten.recipes:beit (train), kernelevolve.aten.recipes:bert (forward), kernelevolve.aten.recipes:bert (train), kernelevolve.aten.recipes:bloom (forward), kernelevolve.aten.recipes:bloom (train), kernelevolve.aten.recipes:botnet (forward), kernelevolve.aten.recipes:botnet (train), kernelevolve.aten.recipes:cait (forward), kernelevolve.aten.recipes:cait (train), kernelevolve.aten.recipes:clip (forward), kernelevolve.aten.recipes:clip (train), kernelevolve.aten.recipes:coatnet (forward), kernelevolve.aten.recipes:coatnet (train), kernelevolve.aten.recipes:convbert (forward), kernelevolve.aten.recipes:convbert (train), kernelevolve.aten.recipes:convmixer (train), kernelevolve.aten.recipes:convnext_tiny (forward), kernelevolve.aten.recipes:convnext_tiny (train), kernelevolve.aten.recipes:crossvit (forward), kernelevolve.aten.recipes:crossvit (train), kernelevolve.aten.recipes:cspdarknet (train), kernelevolve.aten.recipes:deberta (forward), kernelevolve.aten.recipes:deberta (train), kernelevolve.aten.recipes:deformable_detr (forward), kernelevolve.aten.recipes:deformable_detr (train), kernelevolve.aten.recipes:densenet121 (train), kernelevolve.aten.recipes:din (forward), kernelevolve.aten.recipes:din (train), kernelevolve.aten.recipes:dinov2_registers (train), kernelevolve.aten.recipes:dla (train), kernelevolve.aten.recipes:dlrm (train), kernelevolve.aten.recipes:dlrm_criteo (train), kernelevolve.aten.recipes:edgenext (forward), kernelevolve.aten.recipes:edgenext (train), kernelevolve.aten.recipes:efficientnet_b0 (forward), kernelevolve.aten.recipes:efficientnet_b0 (train), kernelevolve.aten.recipes:efficientvit (train), kernelevolve.aten.recipes:encodec (forward), kernelevolve.aten.recipes:encodec (train), kernelevolve.aten.recipes:esm (train), kernelevolve.aten.recipes:eva02 (forward), kernelevolve.aten.recipes:eva02 (train), kernelevolve.aten.recipes:fastvit (forward), kernelevolve.aten.recipes:fastvit (train), kernelevolve.aten.recipes:funnel (forward), kernelevolve.aten.recipes:funnel (train), kernelevolve.aten.recipes:gemma (forward), kernelevolve.aten.recipes:gemma (train), kernelevolve.aten.recipes:ghostnet (forward), kernelevolve.aten.recipes:ghostnet (train), kernelevolve.aten.recipes:gmlp (forward), kernelevolve.aten.recipes:gmlp (train), kernelevolve.aten.recipes:gpt2 (forward), kernelevolve.aten.recipes:gpt2 (train), kernelevolve.aten.recipes:gpt2_adamw (forward), kernelevolve.aten.recipes:gpt2_sample (forward), kernelevolve.aten.recipes:gpt_neox (forward), kernelevolve.aten.recipes:gpt_neox (train), kernelevolve.aten.recipes:hgnet (forward), kernelevolve.aten.recipes:hgnet (train), kernelevolve.aten.recipes:hrnet (train), kernelevolve.aten.recipes:inception_v3 (train), kernelevolve.aten.recipes:levit (forward), kernelevolve.aten.recipes:levit (train), kernelevolve.aten.recipes:llama (forward), kernelevolve.aten.recipes:llama (train), kernelevolve.aten.recipes:llava (train), kernelevolve.aten.recipes:longformer (forward), kernelevolve.aten.recipes:longformer (train), kernelevolve.aten.recipes:mamba (forward), kernelevolve.aten.recipes:mimi (forward), kernelevolve.aten.recipes:mistral (forward), kernelevolve.aten.recipes:mistral (train), kernelevolve.aten.recipes:mixer (train), kernelevolve.aten.recipes:mixtral (forward), kernelevolve.aten.recipes:mixtral (train), kernelevolve.aten.recipes:mobilenetv3 (forward), kernelevolve.aten.recipes:mobilenetv3 (train), kernelevolve.aten.recipes:mobilevit (train), kernelevolve.aten.recipes:nf_resnet (forward), kernelevolve.aten.recipes:nf_resnet (train), kernelevolve.aten.recipes:phi (forward), kernelevolve.aten.recipes:phi (train), kernelevolve.aten.recipes:poolformer (forward), kernelevolve.aten.recipes:poolformer (train), kernelevolve.aten.recipes:qwen2_moe (forward), kernelevolve.aten.recipes:qwen2_moe (train), kernelevolve.aten.recipes:regnety (forward), kernelevolve.aten.recipes:regnety (train), kernelevolve.aten.recipes:res2net (train), kernelevolve.aten.recipes:resmlp (forward), kernelevolve.aten.recipes:resmlp (train), kernelevolve.aten.recipes:resnet50 (train), kernelevolve.aten.recipes:rexnet (forward), kernelevolve.aten.recipes:rexnet (train), kernelevolve.aten.recipes:rwkv (forward), kernelevolve.aten.recipes:rwkv (train), kernelevolve.aten.recipes:segformer (train), kernelevolve.aten.recipes:sequencer (train), kernelevolve.aten.recipes:siglip (train), kernelevolve.aten.recipes:speech_to_text (train), kernelevolve.aten.recipes:swin_tiny (forward), kernelevolve.aten.recipes:swin_tiny (train), kernelevolve.aten.recipes:switch_transformers (train), kernelevolve.aten.recipes:t5 (forward), kernelevolve.aten.recipes:t5 (train), kernelevolve.aten.recipes:time_series_transformer (train), kernelevolve.aten.recipes:tnt (forward), kernelevolve.aten.recipes:tnt (train), kernelevolve.aten.recipes:tresnet (forward), kernelevolve.aten.recipes:tresnet (train), kernelevolve.aten.recipes:twins (train), kernelevolve.aten.recipes:vit_hf (train), kernelevolve.aten.recipes:vit_mae (train), kernelevolve.aten.recipes:vit_small (train), kernelevolve.aten.recipes:volo (forward), kernelevolve.aten.recipes:volo (train), kernelevolve.aten.recipes:vovnet (train), kernelevolve.aten.recipes:wav2vec2 (train), kernelevolve.aten.recipes:wav2vec2_conformer (train), kernelevolve.aten.recipes:whisper (forward), kernelevolve.aten.recipes:whisper (train), kernelevolve.aten.recipes:wide_deep (train), kernelevolve.aten.recipes:xcit (forward), kernelevolve.aten.recipes:xcit (train), kernelevolve.aten.recipes:xlnet (forward), kernelevolve.aten.recipes:xlnet (train), kernelevolve.aten.recipes:yoso (train).
The inputs are the call's positional arguments, then its keyword arguments as one dict (docs/aten.md).
"""

# Generated by `kernelevolve aten generate` (docs/aten.md): do not edit; regenerate.
import torch
import torch.nn as nn

from kernelevolve.aten.spec import build_call

ATEN_OPERATOR = 'aten::mul.Tensor'
ATEN_VARIANTS = ['aten::mul_.Tensor', 'aten::mul.out']
TRACED_SHARE = 0.176764  # its largest share of a traced step's time

CASE = 0
SHAPE_CASES = [{'CASE': 0}, {'CASE': 1}, {'CASE': 2}, {'CASE': 3}]
DTYPE = torch.float32
DEVICE_TYPES = None  # every device; a half-precision check case binds ['cuda']
CHECK_CASES = [
    {'CASE': 4},
    {'CASE': 5},
    {'CASE': 6},
    {'CASE': 7},
    {'CASE': 8},
    {'CASE': 9},
    {'CASE': 10},
    {'CASE': 11},
    {'CASE': 12},
    {'CASE': 13},
    {'CASE': 14},
    {'CASE': 15},
    {'CASE': 16},
    {'CASE': 17},
    {'CASE': 18},
    {'CASE': 19},
    {'CASE': 20},
    {'CASE': 21},
    {'CASE': 22},
    {'CASE': 23},
    {'CASE': 24},
    {'CASE': 25},
    {'CASE': 26},
    {'CASE': 27},
    {'CASE': 4, 'DTYPE': 'bfloat16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 5, 'DTYPE': 'bfloat16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 6, 'DTYPE': 'bfloat16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 7, 'DTYPE': 'bfloat16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 8, 'DTYPE': 'bfloat16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 9, 'DTYPE': 'bfloat16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 10, 'DTYPE': 'bfloat16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 11, 'DTYPE': 'bfloat16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 12, 'DTYPE': 'bfloat16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 13, 'DTYPE': 'bfloat16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 14, 'DTYPE': 'bfloat16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 15, 'DTYPE': 'bfloat16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 16, 'DTYPE': 'bfloat16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 17, 'DTYPE': 'bfloat16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 18, 'DTYPE': 'bfloat16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 19, 'DTYPE': 'bfloat16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 20, 'DTYPE': 'bfloat16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 21, 'DTYPE': 'bfloat16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 22, 'DTYPE': 'bfloat16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 23, 'DTYPE': 'bfloat16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 24, 'DTYPE': 'bfloat16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 25, 'DTYPE': 'bfloat16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 26, 'DTYPE': 'bfloat16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 27, 'DTYPE': 'bfloat16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 4, 'DTYPE': 'float16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 5, 'DTYPE': 'float16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 6, 'DTYPE': 'float16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 7, 'DTYPE': 'float16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 8, 'DTYPE': 'float16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 9, 'DTYPE': 'float16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 10, 'DTYPE': 'float16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 11, 'DTYPE': 'float16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 12, 'DTYPE': 'float16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 13, 'DTYPE': 'float16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 14, 'DTYPE': 'float16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 15, 'DTYPE': 'float16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 16, 'DTYPE': 'float16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 17, 'DTYPE': 'float16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 18, 'DTYPE': 'float16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 19, 'DTYPE': 'float16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 20, 'DTYPE': 'float16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 21, 'DTYPE': 'float16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 22, 'DTYPE': 'float16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 23, 'DTYPE': 'float16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 24, 'DTYPE': 'float16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 25, 'DTYPE': 'float16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 26, 'DTYPE': 'float16', 'DEVICE_TYPES': ['cuda']},
    {'CASE': 27, 'DTYPE': 'float16', 'DEVICE_TYPES': ['cuda']},
]
CALLS = [
    {'args': [{'t': [1, 256, 1, 1], 'dtype': 'float32', 'range': [1.0, 1.0]}, {'t': [1, 256, 1, 1], 'dtype': 'float32', 'range': [0.9999949932098389, 0.9999949932098389]}], 'kwargs': {}},
    {'args': [{'t': [2, 196, 384], 'dtype': 'float32', 'range': [0.0, 0.0], 'sorted': True}, {'t': [384], 'dtype': 'float32', 'range': [9.999999747378752e-05, 9.999999747378752e-05], 'sorted': True}], 'kwargs': {}},
    {'args': [{'t': [1, 512, 1, 1], 'dtype': 'float32', 'range': [1.0, 1.0]}, {'t': [1, 512, 1, 1], 'dtype': 'float32', 'range': [0.9999949932098389, 0.9999949932098389]}], 'kwargs': {}},
    {'args': [{'t': [], 'dtype': 'int64', 'range': [23999, 23999]}, {'t': [], 'dtype': 'int64', 'range': [1, 1]}], 'kwargs': {}},
    {'args': [{'t': [0], 'dtype': 'float32'}, {'t': [0], 'dtype': 'float32'}], 'kwargs': {}},
    {'args': [{'t': [0, 3, 3], 'dtype': 'float32'}, {'t': [0, 3, 3], 'dtype': 'float32'}], 'kwargs': {}},
    {'args': [{'t': [1, 0, 5], 'dtype': 'float32'}, {'t': [1, 0, 5], 'dtype': 'float32'}], 'kwargs': {}},
    {'args': [{'t': [6, 0, 0, 0], 'dtype': 'float32'}, {'t': [6, 0, 0, 0], 'dtype': 'float32'}], 'kwargs': {}},
    {'args': [{'t': [3, 0, 1, 0], 'dtype': 'float32'}, {'t': [3, 0, 1, 0], 'dtype': 'float32'}], 'kwargs': {}},
    {'args': [{'t': [1, 0, 3], 'dtype': 'float32'}, {'t': [1, 0, 3], 'dtype': 'float32'}], 'kwargs': {}},
    {'args': [{'t': [20], 'dtype': 'float32', 'range': [-0.6415987014770508, 0.9420320987701416]}, {'t': [20], 'dtype': 'float32', 'stride': [2], 'offset': 1, 'range': [-0.9420320987701416, 0.6415987014770508]}], 'kwargs': {}},
    {'args': [{'t': [1, 0, 3], 'dtype': 'float32'}, {'t': [1, 0, 3], 'dtype': 'float32', 'offset': 1}], 'kwargs': {}},
    {'args': [{'t': [], 'dtype': 'float32', 'range': [0.9420320987701416, 0.9420320987701416]}, {'t': [], 'dtype': 'float32', 'offset': 1, 'range': [-0.9420320987701416, -0.9420320987701416]}], 'kwargs': {}},
    {'args': [{'t': [1029, 917], 'dtype': 'float32', 'range': [-0.99998939037323, 0.9999899864196777]}, {'t': [1029, 917], 'dtype': 'float32', 'stride': [1834, 2], 'offset': 1, 'range': [-0.9999899864196777, 0.99998939037323]}], 'kwargs': {}},
    {'args': [{'t': [812], 'dtype': 'float32', 'range': [-0.9959865212440491, 0.9987144470214844]}, {'t': [812], 'dtype': 'float32', 'stride': [2], 'offset': 1, 'range': [-0.9987144470214844, 0.9959865212440491]}], 'kwargs': {}},
    {'args': [{'t': [0], 'dtype': 'float32'}, {'t': [0], 'dtype': 'float32', 'offset': 1}], 'kwargs': {}},
    {'args': [{'t': [20, 20], 'dtype': 'float32', 'range': [-2.767547130584717, 3.029174327850342]}, {'t': [20, 20], 'dtype': 'float32', 'range': [-1.0, 1.0]}], 'kwargs': {}},
    {'args': [{'t': [1029, 917], 'dtype': 'float32', 'range': [-4.995326995849609, 4.587242126464844]}, {'t': [1029, 917], 'dtype': 'float32', 'range': [-1.0, 1.0]}], 'kwargs': {}},
    {'args': [{'t': [812], 'dtype': 'float32', 'range': [-3.378307819366455, 3.5464928150177]}, {'t': [812], 'dtype': 'float32', 'range': [-1.0, 1.0]}], 'kwargs': {}},
    {'args': [{'t': [256], 'dtype': 'float32', 'range': [-3.270355463027954, 2.68406081199646]}, {'t': [256], 'dtype': 'float32', 'range': [-1.0, 1.0]}], 'kwargs': {}},
    {'args': [{'t': [100], 'dtype': 'float32', 'range': [-1.9814460277557373, 3.390117645263672]}, {'t': [100], 'dtype': 'float32', 'range': [-1.0, 1.0]}], 'kwargs': {}},
    {'args': [{'t': [9], 'dtype': 'float32', 'range': [-1.8807637691497803, 1.8512327671051025]}, {'t': [9], 'dtype': 'float32', 'range': [-1.0, 1.0]}], 'kwargs': {}},
    {'args': [{'t': [128, 128], 'dtype': 'float32', 'range': [-4.676318168640137, 3.6273272037506104]}, {'t': [128, 128], 'dtype': 'float32', 'range': [-1.0, 1.0]}], 'kwargs': {}},
    {'args': [{'t': [20, 20], 'dtype': 'float32', 'range': [-3.0250444412231445, 2.7584550380706787]}, {'t': [20, 20], 'dtype': 'float32', 'range': [-1.0, 1.0]}], 'kwargs': {}},
    {'args': [{'t': [1029, 917], 'dtype': 'float32', 'range': [-4.727858543395996, 4.789356231689453]}, {'t': [1029, 917], 'dtype': 'float32', 'range': [-1.0, 1.0]}], 'kwargs': {}},
    {'args': [{'t': [812], 'dtype': 'float32', 'range': [-2.5588219165802, 2.6417734622955322]}, {'t': [812], 'dtype': 'float32', 'range': [-1.0, 1.0]}], 'kwargs': {}},
    {'args': [{'t': [256], 'dtype': 'float32', 'range': [-2.716510772705078, 2.6287248134613037]}, {'t': [256], 'dtype': 'float32', 'range': [-1.0, 1.0]}], 'kwargs': {}},
    {'args': [{'t': [100], 'dtype': 'float32', 'range': [-2.5465829372406006, 2.1474766731262207]}, {'t': [100], 'dtype': 'float32', 'range': [-1.0, 1.0]}], 'kwargs': {}},
]


class Model(nn.Module):
    def forward(self, *inputs):
        *args, kwargs = inputs
        return torch.ops.aten.mul.Tensor(*args, **kwargs)


def get_inputs():
    return build_call(CALLS[CASE])


def get_init_inputs():
    return []
