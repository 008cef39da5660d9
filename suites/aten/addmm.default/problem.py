"""aten::addmm.default: the ATen operator, called as the traced models call it.

Timed on the 4 most called distinct traced calls (SHAPE_CASES); checked on those and on 20 calls
that OpInfo samples (addmm, nn.functional.linear) make (CHECK_CASES), and on GPUs on 40 of those again in bfloat16 or float16. Traced in: kernelevolve.aten.recipes:bart (forward), kernelevolve.aten.recipes:bart (train), kernelevolve.aten.recipes:beit (forward), kernelevolve.aten.recipes:beit (train), kernelevolve.aten.recipes:bert (forward), kernelevolve.aten.recipes:bert (train), kernelevolve.aten.recipes:bloom (forward), kernelevolve.aten.recipes:bloom (train), kernelevolve.aten.recipes:botnet (forward), kernelevolve.aten.recipes:botnet (train), kernelevolve.aten.recipes:cait (forward), kernelevolve.aten.recipes:cait (train), kernelevolve.aten.recipes:clip (forward), kernelevolve.aten.recipes:clip (train), kernelevolve.aten.recipes:coatnet (forward), kernelevolve.aten.recipes:coatnet (train), kernelevolve.aten.recipes:convbert (forward), kernelevolve.aten.recipes:convbert (train), kernelevolve.aten.recipes:convmixer (forward), kernelevolve.aten.recipes:convmixer (train), kernelevolve.aten.recipes:convnext_tiny (forward), kernelevolve.aten.recipes:convnext_tiny (train), kernelevolve.aten.recipes:crossvit (forward), kernelevolve.aten.recipes:crossvit (train), kernelevolve.aten.recipes:cspdarknet (forward), kernelevolve.aten.recipes:cspdarknet (train), kernelevolve.aten.recipes:deberta (forward), kernelevolve.aten.recipes:deberta (train), kernelevolve.aten.recipes:deformable_detr (forward), kernelevolve.aten.recipes:deformable_detr (train), kernelevolve.aten.recipes:densenet121 (forward), kernelevolve.aten.recipes:densenet121 (train), kernelevolve.aten.recipes:din (forward), kernelevolve.aten.recipes:din (train), kernelevolve.aten.recipes:dinov2_registers (train), kernelevolve.aten.recipes:dlrm (forward), kernelevolve.aten.recipes:dlrm (train), kernelevolve.aten.recipes:dlrm_criteo (train), kernelevolve.aten.recipes:edgenext (forward), kernelevolve.aten.recipes:edgenext (train), kernelevolve.aten.recipes:efficientnet_b0 (forward), kernelevolve.aten.recipes:efficientnet_b0 (train), kernelevolve.aten.recipes:efficientvit (forward), kernelevolve.aten.recipes:efficientvit (train), kernelevolve.aten.recipes:esm (train), kernelevolve.aten.recipes:eva02 (forward), kernelevolve.aten.recipes:eva02 (train), kernelevolve.aten.recipes:fastvit (forward), kernelevolve.aten.recipes:fastvit (train), kernelevolve.aten.recipes:funnel (forward), kernelevolve.aten.recipes:funnel (train), kernelevolve.aten.recipes:ghostnet (forward), kernelevolve.aten.recipes:ghostnet (train), kernelevolve.aten.recipes:gmlp (forward), kernelevolve.aten.recipes:gmlp (train), kernelevolve.aten.recipes:gpt2 (forward), kernelevolve.aten.recipes:gpt2 (train), kernelevolve.aten.recipes:gpt2_adamw (forward), kernelevolve.aten.recipes:gpt2_sample (forward), kernelevolve.aten.recipes:gpt_neox (forward), kernelevolve.aten.recipes:gpt_neox (train), kernelevolve.aten.recipes:hgnet (forward), kernelevolve.aten.recipes:hgnet (train), kernelevolve.aten.recipes:hrnet (forward), kernelevolve.aten.recipes:hrnet (train), kernelevolve.aten.recipes:inception_v3 (forward), kernelevolve.aten.recipes:inception_v3 (train), kernelevolve.aten.recipes:levit (forward), kernelevolve.aten.recipes:levit (train), kernelevolve.aten.recipes:llava (train), kernelevolve.aten.recipes:longformer (forward), kernelevolve.aten.recipes:longformer (train), kernelevolve.aten.recipes:mixer (forward), kernelevolve.aten.recipes:mixer (train), kernelevolve.aten.recipes:mobilenetv3 (forward), kernelevolve.aten.recipes:mobilenetv3 (train), kernelevolve.aten.recipes:mobilevit (forward), kernelevolve.aten.recipes:mobilevit (train), kernelevolve.aten.recipes:nf_resnet (forward), kernelevolve.aten.recipes:nf_resnet (train), kernelevolve.aten.recipes:phi (forward), kernelevolve.aten.recipes:phi (train), kernelevolve.aten.recipes:poolformer (forward), kernelevolve.aten.recipes:poolformer (train), kernelevolve.aten.recipes:qwen2_moe (forward), kernelevolve.aten.recipes:qwen2_moe (train), kernelevolve.aten.recipes:regnety (forward), kernelevolve.aten.recipes:regnety (train), kernelevolve.aten.recipes:res2net (forward), kernelevolve.aten.recipes:res2net (train), kernelevolve.aten.recipes:resmlp (forward), kernelevolve.aten.recipes:resmlp (train), kernelevolve.aten.recipes:resnet50 (forward), kernelevolve.aten.recipes:resnet50 (train), kernelevolve.aten.recipes:rexnet (forward), kernelevolve.aten.recipes:rexnet (train), kernelevolve.aten.recipes:segformer (forward), kernelevolve.aten.recipes:segformer (train), kernelevolve.aten.recipes:sequencer (forward), kernelevolve.aten.recipes:sequencer (train), kernelevolve.aten.recipes:siglip (train), kernelevolve.aten.recipes:speech_to_text (train), kernelevolve.aten.recipes:swin_tiny (forward), kernelevolve.aten.recipes:swin_tiny (train), kernelevolve.aten.recipes:time_series_transformer (train), kernelevolve.aten.recipes:tnt (forward), kernelevolve.aten.recipes:tnt (train), kernelevolve.aten.recipes:tresnet (forward), kernelevolve.aten.recipes:tresnet (train), kernelevolve.aten.recipes:twins (forward), kernelevolve.aten.recipes:twins (train), kernelevolve.aten.recipes:vit_hf (forward), kernelevolve.aten.recipes:vit_hf (train), kernelevolve.aten.recipes:vit_mae (train), kernelevolve.aten.recipes:vit_small (forward), kernelevolve.aten.recipes:vit_small (train), kernelevolve.aten.recipes:volo (forward), kernelevolve.aten.recipes:volo (train), kernelevolve.aten.recipes:vovnet (forward), kernelevolve.aten.recipes:vovnet (train), kernelevolve.aten.recipes:wav2vec2 (forward), kernelevolve.aten.recipes:wav2vec2 (train), kernelevolve.aten.recipes:wav2vec2_conformer (train), kernelevolve.aten.recipes:whisper (forward), kernelevolve.aten.recipes:whisper (train), kernelevolve.aten.recipes:wide_deep (train), kernelevolve.aten.recipes:xcit (forward), kernelevolve.aten.recipes:xcit (train), kernelevolve.aten.recipes:xlnet (forward), kernelevolve.aten.recipes:xlnet (train), kernelevolve.aten.recipes:yoso (train).
The inputs are the call's positional arguments, then its keyword arguments as one dict (docs/aten.md).
"""

# Generated by `kernelevolve aten generate` (docs/aten.md): do not edit; regenerate.
import torch
import torch.nn as nn

from kernelevolve.aten.spec import build_call

ATEN_OPERATOR = 'aten::addmm.default'
ATEN_VARIANTS = ['aten::addmm_.default', 'aten::addmm.out']
TRACED_SHARE = 0.751492  # its largest share of a traced step's time

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
]
CALLS = [
    {'args': [{'t': [2304], 'dtype': 'float32', 'range': [0.0, 0.0], 'sorted': True}, {'t': [394, 768], 'dtype': 'float32', 'range': [-4.6232991218566895, 4.2846221923828125]}, {'t': [768, 2304], 'dtype': 'float32', 'stride': [1, 768], 'range': [-0.09641411900520325, 0.09501515328884125]}], 'kwargs': {}},
    {'args': [{'t': [3072], 'dtype': 'float32', 'range': [0.0, 0.0], 'sorted': True}, {'t': [394, 768], 'dtype': 'float32', 'range': [-4.62195348739624, 4.285843849182129]}, {'t': [768, 3072], 'dtype': 'float32', 'stride': [1, 768], 'range': [-0.09713894128799438, 0.103331558406353]}], 'kwargs': {}},
    {'args': [{'t': [768], 'dtype': 'float32', 'range': [0.0, 0.0], 'sorted': True}, {'t': [394, 3072], 'dtype': 'float32', 'range': [-0.16997122764587402, 2.6003663539886475]}, {'t': [3072, 768], 'dtype': 'float32', 'stride': [1, 3072], 'range': [-0.07487842440605164, 0.07010503858327866]}], 'kwargs': {}},
    {'args': [{'t': [3072], 'dtype': 'float32', 'range': [0.0, 0.0], 'sorted': True}, {'t': [256, 1024], 'dtype': 'float32', 'range': [-4.251688480377197, 4.5500335693359375]}, {'t': [1024, 3072], 'dtype': 'float32', 'stride': [1, 1024], 'range': [-0.09980760514736176, 0.1038217544555664]}], 'kwargs': {}},
    {'args': [{'t': [5, 10], 'dtype': 'float32', 'range': [-8.97458267211914, 8.397199630737305]}, {'t': [5, 0], 'dtype': 'float32'}, {'t': [0, 10], 'dtype': 'float32'}], 'kwargs': {'beta': 0.2, 'alpha': 0.6}},
    {'args': [{'t': [10], 'dtype': 'float32', 'range': [-8.478373527526855, 3.611605167388916]}, {'t': [5, 0], 'dtype': 'float32'}, {'t': [0, 10], 'dtype': 'float32'}], 'kwargs': {'beta': 0.2, 'alpha': 0.6}},
    {'args': [{'t': [2, 3], 'dtype': 'float32', 'stride': [6, 2], 'offset': 1, 'range': [-8.478373527526855, 3.611605167388916]}, {'t': [2, 2], 'dtype': 'float32', 'stride': [4, 2], 'offset': 1, 'range': [-8.067646980285645, 3.1285104751586914]}, {'t': [2, 3], 'dtype': 'float32', 'stride': [6, 2], 'offset': 1, 'range': [-3.973021984100342, 5.774446487426758]}], 'kwargs': {'beta': 0.2, 'alpha': 0.6}},
    {'args': [{'t': [3, 3], 'dtype': 'float32', 'stride': [6, 2], 'offset': 1, 'range': [-8.478373527526855, 3.611605167388916]}, {'t': [3, 3], 'dtype': 'float32', 'stride': [6, 2], 'offset': 1, 'range': [-3.973021984100342, 5.774446487426758]}, {'t': [3, 3], 'dtype': 'float32', 'stride': [6, 2], 'offset': 1, 'range': [-4.702395439147949, 8.397199630737305]}], 'kwargs': {'beta': 0.2, 'alpha': 0.6}},
    {'args': [{'t': [1], 'dtype': 'float32', 'offset': 1, 'range': [-8.478373527526855, -8.478373527526855]}, {'t': [2, 2], 'dtype': 'float32', 'stride': [4, 2], 'offset': 1, 'range': [-7.950586795806885, -1.765825867652893]}, {'t': [2, 3], 'dtype': 'float32', 'stride': [6, 2], 'offset': 1, 'range': [-8.067646980285645, 5.106744766235352]}], 'kwargs': {'beta': 0.2, 'alpha': 0.6}},
    {'args': [{'t': [], 'dtype': 'float32', 'offset': 1, 'range': [-8.478373527526855, -8.478373527526855]}, {'t': [2, 2], 'dtype': 'float32', 'stride': [4, 2], 'offset': 1, 'range': [-7.950586795806885, -1.765825867652893]}, {'t': [2, 3], 'dtype': 'float32', 'stride': [6, 2], 'offset': 1, 'range': [-8.067646980285645, 5.106744766235352]}], 'kwargs': {'beta': 0.2, 'alpha': 0.6}},
    {'args': [{'t': [5, 10], 'dtype': 'float32', 'range': [-8.97458267211914, 8.397199630737305]}, {'t': [5, 0], 'dtype': 'float32'}, {'t': [0, 10], 'dtype': 'float32'}], 'kwargs': {}},
    {'args': [{'t': [10], 'dtype': 'float32', 'range': [-8.478373527526855, 3.611605167388916]}, {'t': [5, 0], 'dtype': 'float32'}, {'t': [0, 10], 'dtype': 'float32'}], 'kwargs': {}},
    {'args': [{'t': [2, 3], 'dtype': 'float32', 'stride': [6, 2], 'offset': 1, 'range': [-8.478373527526855, 3.611605167388916]}, {'t': [2, 2], 'dtype': 'float32', 'stride': [4, 2], 'offset': 1, 'range': [-8.067646980285645, 3.1285104751586914]}, {'t': [2, 3], 'dtype': 'float32', 'stride': [6, 2], 'offset': 1, 'range': [-3.973021984100342, 5.774446487426758]}], 'kwargs': {}},
    {'args': [{'t': [3, 3], 'dtype': 'float32', 'stride': [6, 2], 'offset': 1, 'range': [-8.478373527526855, 3.611605167388916]}, {'t': [3, 3], 'dtype': 'float32', 'stride': [6, 2], 'offset': 1, 'range': [-3.973021984100342, 5.774446487426758]}, {'t': [3, 3], 'dtype': 'float32', 'stride': [6, 2], 'offset': 1, 'range': [-4.702395439147949, 8.397199630737305]}], 'kwargs': {}},
    {'args': [{'t': [1], 'dtype': 'float32', 'offset': 1, 'range': [-8.478373527526855, -8.478373527526855]}, {'t': [2, 2], 'dtype': 'float32', 'stride': [4, 2], 'offset': 1, 'range': [-7.950586795806885, -1.765825867652893]}, {'t': [2, 3], 'dtype': 'float32', 'stride': [6, 2], 'offset': 1, 'range': [-8.067646980285645, 5.106744766235352]}], 'kwargs': {}},
    {'args': [{'t': [], 'dtype': 'float32', 'offset': 1, 'range': [-8.478373527526855, -8.478373527526855]}, {'t': [2, 2], 'dtype': 'float32', 'stride': [4, 2], 'offset': 1, 'range': [-7.950586795806885, -1.765825867652893]}, {'t': [2, 3], 'dtype': 'float32', 'stride': [6, 2], 'offset': 1, 'range': [-8.067646980285645, 5.106744766235352]}], 'kwargs': {}},
    {'args': [{'t': [2, 3], 'dtype': 'float32', 'range': [-8.478373527526855, 3.611605167388916]}, {'t': [2, 2], 'dtype': 'float32', 'range': [-8.067646980285645, 3.1285104751586914]}, {'t': [2, 3], 'dtype': 'float32', 'range': [-3.973021984100342, 5.774446487426758]}], 'kwargs': {'beta': 0.2, 'alpha': 0.6}},
    {'args': [{'t': [3, 3], 'dtype': 'float32', 'range': [-8.478373527526855, 3.611605167388916]}, {'t': [3, 3], 'dtype': 'float32', 'range': [-3.973021984100342, 5.774446487426758]}, {'t': [3, 3], 'dtype': 'float32', 'range': [-4.702395439147949, 8.397199630737305]}], 'kwargs': {'beta': 0.2, 'alpha': 0.6}},
    {'args': [{'t': [1], 'dtype': 'float32', 'range': [-8.478373527526855, -8.478373527526855]}, {'t': [2, 2], 'dtype': 'float32', 'range': [-7.950586795806885, -1.765825867652893]}, {'t': [2, 3], 'dtype': 'float32', 'range': [-8.067646980285645, 5.106744766235352]}], 'kwargs': {'beta': 0.2, 'alpha': 0.6}},
    {'args': [{'t': [], 'dtype': 'float32', 'range': [-8.478373527526855, -8.478373527526855]}, {'t': [2, 2], 'dtype': 'float32', 'range': [-7.950586795806885, -1.765825867652893]}, {'t': [2, 3], 'dtype': 'float32', 'range': [-8.067646980285645, 5.106744766235352]}], 'kwargs': {'beta': 0.2, 'alpha': 0.6}},
    {'args': [{'t': [2, 3], 'dtype': 'float32', 'range': [-8.478373527526855, 3.611605167388916]}, {'t': [2, 2], 'dtype': 'float32', 'range': [-8.067646980285645, 3.1285104751586914]}, {'t': [2, 3], 'dtype': 'float32', 'range': [-3.973021984100342, 5.774446487426758]}], 'kwargs': {}},
    {'args': [{'t': [3, 3], 'dtype': 'float32', 'range': [-8.478373527526855, 3.611605167388916]}, {'t': [3, 3], 'dtype': 'float32', 'range': [-3.973021984100342, 5.774446487426758]}, {'t': [3, 3], 'dtype': 'float32', 'range': [-4.702395439147949, 8.397199630737305]}], 'kwargs': {}},
    {'args': [{'t': [1], 'dtype': 'float32', 'range': [-8.478373527526855, -8.478373527526855]}, {'t': [2, 2], 'dtype': 'float32', 'range': [-7.950586795806885, -1.765825867652893]}, {'t': [2, 3], 'dtype': 'float32', 'range': [-8.067646980285645, 5.106744766235352]}], 'kwargs': {}},
    {'args': [{'t': [], 'dtype': 'float32', 'range': [-8.478373527526855, -8.478373527526855]}, {'t': [2, 2], 'dtype': 'float32', 'range': [-7.950586795806885, -1.765825867652893]}, {'t': [2, 3], 'dtype': 'float32', 'range': [-8.067646980285645, 5.106744766235352]}], 'kwargs': {}},
]


class Model(nn.Module):
    def forward(self, *inputs):
        *args, kwargs = inputs
        return torch.ops.aten.addmm.default(*args, **kwargs)


def get_inputs():
    return build_call(CALLS[CASE])


def get_init_inputs():
    return []
