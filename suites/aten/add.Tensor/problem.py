"""aten::add.Tensor: the ATen operator, called as the traced models call it.

Timed on the 4 most called distinct traced calls (SHAPE_CASES); checked on those and on 24 calls
that OpInfo samples (add, aminmax, masked.var, native_group_norm, native_layer_norm, nn.functional.gaussian_nll_loss, nn.functional.group_norm, nn.functional.hinge_embedding_loss, nn.functional.linear, nn.functional.pad) make (CHECK_CASES), and on GPUs on 48 of those again in bfloat16 or float16. Traced in: kernelevolve.aten.recipes:bart (forward), kernelevolve.aten.recipes:bart (train), kernelevolve.aten.recipes:beit (forward), kernelevolve.aten.recipes:beit (train), kernelevolve.aten.recipes:bert (forward), kernelevolve.aten.recipes:bert (train), kernelevolve.aten.recipes:bloom (forward), kernelevolve.aten.recipes:bloom (train), kernelevolve.aten.recipes:botnet (forward), kernelevolve.aten.recipes:botnet (train), kernelevolve.aten.recipes:cait (forward), kernelevolve.aten.recipes:cait (train), kernelevolve.aten.recipes:clip (forward), kernelevolve.aten.recipes:clip (train), kernelevolve.aten.recipes:coatnet (forward), kernelevolve.aten.recipes:coatnet (train), kernelevolve.aten.recipes:convbert (forward), kernelevolve.aten.recipes:convbert (train), kernelevolve.aten.recipes:convmixer (forward), kernelevolve.aten.recipes:convmixer (train), kernelevolve.aten.recipes:convnext_tiny (forward), kernelevolve.aten.recipes:convnext_tiny (train), kernelevolve.aten.recipes:crossvit (forward), kernelevolve.aten.recipes:crossvit (train), kernelevolve.aten.recipes:cspdarknet (forward), kernelevolve.aten.recipes:cspdarknet (train), kernelevolve.aten.recipes:deberta (forward), kernelevolve.aten.recipes:deberta (train), kernelevolve.aten.recipes:deformable_detr (forward), kernelevolve.aten.recipes:deformable_detr (train), kernelevolve.aten.recipes:densenet121 (train), kernelevolve.aten.recipes:din (train), kernelevolve.aten.recipes:dinov2_registers (train), kernelevolve.aten.recipes:dla (forward), kernelevolve.aten.recipes:dla (train), kernelevolve.aten.recipes:dlrm (train), kernelevolve.aten.recipes:dlrm_criteo (train), kernelevolve.aten.recipes:edgenext (forward), kernelevolve.aten.recipes:edgenext (train), kernelevolve.aten.recipes:efficientnet_b0 (forward), kernelevolve.aten.recipes:efficientnet_b0 (train), kernelevolve.aten.recipes:efficientvit (forward), kernelevolve.aten.recipes:efficientvit (train), kernelevolve.aten.recipes:encodec (forward), kernelevolve.aten.recipes:encodec (train), kernelevolve.aten.recipes:esm (train), kernelevolve.aten.recipes:eva02 (forward), kernelevolve.aten.recipes:eva02 (train), kernelevolve.aten.recipes:fastvit (forward), kernelevolve.aten.recipes:fastvit (train), kernelevolve.aten.recipes:funnel (forward), kernelevolve.aten.recipes:funnel (train), kernelevolve.aten.recipes:gemma (forward), kernelevolve.aten.recipes:gemma (train), kernelevolve.aten.recipes:ghostnet (forward), kernelevolve.aten.recipes:ghostnet (train), kernelevolve.aten.recipes:gmlp (forward), kernelevolve.aten.recipes:gmlp (train), kernelevolve.aten.recipes:gpt2 (forward), kernelevolve.aten.recipes:gpt2 (train), kernelevolve.aten.recipes:gpt2_adamw (forward), kernelevolve.aten.recipes:gpt2_sample (forward), kernelevolve.aten.recipes:gpt_neox (forward), kernelevolve.aten.recipes:gpt_neox (train), kernelevolve.aten.recipes:hgnet (forward), kernelevolve.aten.recipes:hgnet (train), kernelevolve.aten.recipes:hrnet (forward), kernelevolve.aten.recipes:hrnet (train), kernelevolve.aten.recipes:inception_v3 (train), kernelevolve.aten.recipes:levit (forward), kernelevolve.aten.recipes:levit (train), kernelevolve.aten.recipes:llama (forward), kernelevolve.aten.recipes:llama (train), kernelevolve.aten.recipes:llava (train), kernelevolve.aten.recipes:longformer (forward), kernelevolve.aten.recipes:longformer (train), kernelevolve.aten.recipes:mamba (forward), kernelevolve.aten.recipes:mimi (forward), kernelevolve.aten.recipes:mistral (forward), kernelevolve.aten.recipes:mistral (train), kernelevolve.aten.recipes:mixer (forward), kernelevolve.aten.recipes:mixer (train), kernelevolve.aten.recipes:mixtral (forward), kernelevolve.aten.recipes:mixtral (train), kernelevolve.aten.recipes:mobilenetv3 (forward), kernelevolve.aten.recipes:mobilenetv3 (train), kernelevolve.aten.recipes:mobilevit (forward), kernelevolve.aten.recipes:mobilevit (train), kernelevolve.aten.recipes:nf_resnet (forward), kernelevolve.aten.recipes:nf_resnet (train), kernelevolve.aten.recipes:phi (forward), kernelevolve.aten.recipes:phi (train), kernelevolve.aten.recipes:poolformer (forward), kernelevolve.aten.recipes:poolformer (train), kernelevolve.aten.recipes:qwen2_moe (forward), kernelevolve.aten.recipes:qwen2_moe (train), kernelevolve.aten.recipes:regnety (forward), kernelevolve.aten.recipes:regnety (train), kernelevolve.aten.recipes:res2net (forward), kernelevolve.aten.recipes:res2net (train), kernelevolve.aten.recipes:resmlp (forward), kernelevolve.aten.recipes:resmlp (train), kernelevolve.aten.recipes:resnet50 (forward), kernelevolve.aten.recipes:resnet50 (train), kernelevolve.aten.recipes:rexnet (forward), kernelevolve.aten.recipes:rexnet (train), kernelevolve.aten.recipes:rwkv (forward), kernelevolve.aten.recipes:rwkv (train), kernelevolve.aten.recipes:segformer (forward), kernelevolve.aten.recipes:segformer (train), kernelevolve.aten.recipes:sequencer (forward), kernelevolve.aten.recipes:sequencer (train), kernelevolve.aten.recipes:siglip (train), kernelevolve.aten.recipes:speech_to_text (train), kernelevolve.aten.recipes:swin_tiny (forward), kernelevolve.aten.recipes:swin_tiny (train), kernelevolve.aten.recipes:switch_transformers (train), kernelevolve.aten.recipes:t5 (forward), kernelevolve.aten.recipes:t5 (train), kernelevolve.aten.recipes:time_series_transformer (train), kernelevolve.aten.recipes:tnt (forward), kernelevolve.aten.recipes:tnt (train), kernelevolve.aten.recipes:tresnet (forward), kernelevolve.aten.recipes:tresnet (train), kernelevolve.aten.recipes:twins (forward), kernelevolve.aten.recipes:twins (train), kernelevolve.aten.recipes:vit_hf (forward), kernelevolve.aten.recipes:vit_hf (train), kernelevolve.aten.recipes:vit_mae (train), kernelevolve.aten.recipes:vit_small (forward), kernelevolve.aten.recipes:vit_small (train), kernelevolve.aten.recipes:volo (forward), kernelevolve.aten.recipes:volo (train), kernelevolve.aten.recipes:vovnet (train), kernelevolve.aten.recipes:wav2vec2 (forward), kernelevolve.aten.recipes:wav2vec2 (train), kernelevolve.aten.recipes:wav2vec2_conformer (train), kernelevolve.aten.recipes:whisper (forward), kernelevolve.aten.recipes:whisper (train), kernelevolve.aten.recipes:wide_deep (train), kernelevolve.aten.recipes:xcit (forward), kernelevolve.aten.recipes:xcit (train), kernelevolve.aten.recipes:xlnet (forward), kernelevolve.aten.recipes:xlnet (train), kernelevolve.aten.recipes:yoso (train).
The inputs are the call's positional arguments, then its keyword arguments as one dict (docs/aten.md).
"""

# Generated by `kernelevolve aten generate` (docs/aten.md): do not edit; regenerate.
import torch
import torch.nn as nn

from kernelevolve.aten.spec import build_call

ATEN_OPERATOR = 'aten::add.Tensor'
ATEN_VARIANTS = ['aten::add_.Tensor', 'aten::add.out']
TRACED_SHARE = 0.153482  # its largest share of a traced step's time

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
    {'args': [{'t': [], 'dtype': 'int64', 'range': [1, 1]}, 1], 'kwargs': {}},
    {'args': [{'t': [128], 'dtype': 'int64', 'range': [0, 127], 'sorted': True}, 0], 'kwargs': {}},
    {'args': [{'t': [1, 256, 1, 1], 'dtype': 'float32', 'range': [1.0, 1.0]}, 1e-05], 'kwargs': {}},
    {'args': [{'t': [2, 196, 256], 'dtype': 'float32', 'range': [0.0, 0.0], 'sorted': True}, {'t': [2, 196, 256], 'dtype': 'float32', 'range': [0.0, 0.0], 'sorted': True}], 'kwargs': {}},
    {'args': [{'t': [0, 1, 3], 'dtype': 'float32'}, {'t': [0, 10, 3], 'dtype': 'float32'}], 'kwargs': {}},
    {'args': [{'t': [0], 'dtype': 'float32'}, {'t': [0], 'dtype': 'float32'}], 'kwargs': {}},
    {'args': [{'t': [1, 0, 3], 'dtype': 'float32'}, {'t': [1, 0, 3], 'dtype': 'float32'}], 'kwargs': {}},
    {'args': [{'t': [2], 'dtype': 'float32', 'stride': [2], 'offset': 1, 'range': [-2.400455951690674, -1.765825867652893]}, {'t': [], 'dtype': 'float32', 'range': [-7.950586795806885, -7.950586795806885]}], 'kwargs': {}},
    {'args': [{'t': [1], 'dtype': 'float32', 'range': [-8.478373527526855, -8.478373527526855]}, {'t': [2], 'dtype': 'float32', 'stride': [2], 'offset': 1, 'range': [-7.950586795806885, -4.3228044509887695]}], 'kwargs': {}},
    {'args': [{'t': [2, 1], 'dtype': 'float32', 'stride': [2, 2], 'offset': 1, 'range': [-2.400455951690674, -1.765825867652893]}, {'t': [2], 'dtype': 'float32', 'stride': [2], 'offset': 1, 'range': [-0.5734938383102417, 3.611605167388916]}], 'kwargs': {}},
    {'args': [{'t': [1, 2], 'dtype': 'float32', 'stride': [4, 2], 'offset': 1, 'range': [-2.400455951690674, -1.765825867652893]}, {'t': [2], 'dtype': 'float32', 'stride': [2], 'offset': 1, 'range': [-0.5734938383102417, 3.611605167388916]}], 'kwargs': {}},
    {'args': [{'t': [3, 2], 'dtype': 'float32', 'stride': [4, 2], 'offset': 1, 'range': [-3.033684730529785, 3.611605167388916]}, {'t': [2], 'dtype': 'float32', 'stride': [2], 'offset': 1, 'range': [3.270799398422241, 5.774446487426758]}], 'kwargs': {}},
    {'args': [{'t': [1, 3, 2], 'dtype': 'float32', 'stride': [12, 4, 2], 'offset': 1, 'range': [-3.033684730529785, 3.611605167388916]}, {'t': [2], 'dtype': 'float32', 'stride': [2], 'offset': 1, 'range': [3.270799398422241, 5.774446487426758]}], 'kwargs': {}},
    {'args': [{'t': [1, 3, 2], 'dtype': 'float32', 'stride': [12, 4, 2], 'offset': 1, 'range': [-3.033684730529785, 3.611605167388916]}, {'t': [3, 2], 'dtype': 'float32', 'stride': [4, 2], 'offset': 1, 'range': [-3.522088050842285, 5.774446487426758]}], 'kwargs': {}},
    {'args': [{'t': [3, 1, 2], 'dtype': 'float32', 'stride': [4, 4, 2], 'offset': 1, 'range': [-3.033684730529785, 3.611605167388916]}, {'t': [3, 2], 'dtype': 'float32', 'stride': [4, 2], 'offset': 1, 'range': [-3.522088050842285, 5.774446487426758]}], 'kwargs': {}},
    {'args': [{'t': [2, 3, 2], 'dtype': 'float32', 'stride': [12, 4, 2], 'offset': 1, 'range': [-3.522088050842285, 5.774446487426758]}, {'t': [], 'dtype': 'float32', 'range': [8.397199630737305, 8.397199630737305]}], 'kwargs': {}},
    {'args': [{'t': [], 'dtype': 'float32', 'range': [-8.478373527526855, -8.478373527526855]}, {'t': [], 'dtype': 'float32', 'range': [-1.765825867652893, -1.765825867652893]}], 'kwargs': {}},
    {'args': [{'t': [5], 'dtype': 'float32', 'range': [-8.478373527526855, -1.765825867652893]}, {'t': [], 'dtype': 'float32', 'range': [3.611605167388916, 3.611605167388916]}], 'kwargs': {}},
    {'args': [{'t': [5, 1], 'dtype': 'float32', 'range': [-8.478373527526855, -1.765825867652893]}, {'t': [5], 'dtype': 'float32', 'range': [-8.067646980285645, 3.611605167388916]}], 'kwargs': {}},
    {'args': [{'t': [10, 5], 'dtype': 'float32', 'range': [-8.97458267211914, 8.397199630737305]}, {'t': [], 'dtype': 'float32', 'range': [4.550469398498535, 4.550469398498535]}], 'kwargs': {}},
    {'args': [{'t': [5, 10, 5], 'dtype': 'float32', 'range': [-8.988519668579102, 8.963968276977539]}, {'t': [10, 5], 'dtype': 'float32', 'range': [-7.530536651611328, 8.246907234191895]}], 'kwargs': {}},
    {'args': [{'t': [5, 10, 5], 'dtype': 'float32', 'range': [-8.988519668579102, 8.963968276977539]}, {'t': [5, 10, 5], 'dtype': 'float32', 'range': [-8.869424819946289, 8.954675674438477]}], 'kwargs': {}},
    {'args': [{'t': [10, 1, 5], 'dtype': 'float32', 'range': [-8.97458267211914, 8.397199630737305]}, {'t': [10, 5], 'dtype': 'float32', 'range': [-8.805970191955566, 8.347665786743164]}], 'kwargs': {}},
    {'args': [{'t': [10, 1, 5], 'dtype': 'float32', 'range': [-8.97458267211914, 8.397199630737305]}, {'t': [1, 10, 5], 'dtype': 'float32', 'range': [-8.805970191955566, 8.347665786743164]}], 'kwargs': {}},
    {'args': [{'t': [5, 5], 'dtype': 'float32', 'range': [-8.478373527526855, 8.397199630737305]}, {'t': [5, 5], 'dtype': 'float32', 'range': [-8.97458267211914, 8.210625648498535]}], 'kwargs': {'alpha': 2}},
    {'args': [{'t': [5, 5], 'dtype': 'float32', 'range': [-8.478373527526855, 8.397199630737305]}, {'t': [5, 5], 'dtype': 'float32', 'range': [-8.97458267211914, 8.210625648498535]}], 'kwargs': {'alpha': -3.125}},
    {'args': [{'t': [20], 'dtype': 'float32', 'range': [-8.478373527526855, 5.774446487426758]}, {'t': [20], 'dtype': 'float32', 'range': [-7.614414691925049, 8.397199630737305]}], 'kwargs': {}},
    {'args': [{'t': [812], 'dtype': 'float32', 'range': [-8.988519668579102, 8.963968276977539]}, {'t': [812], 'dtype': 'float32', 'range': [-8.964069366455078, 8.995477676391602]}], 'kwargs': {}},
]


class Model(nn.Module):
    def forward(self, *inputs):
        *args, kwargs = inputs
        return torch.ops.aten.add.Tensor(*args, **kwargs)


def get_inputs():
    return build_call(CALLS[CASE])


def get_init_inputs():
    return []
