"""aten::mm.default: the ATen operator, called as the traced models call it.

Timed on the 4 most called distinct traced calls (SHAPE_CASES); checked on those and on 24 calls
that OpInfo samples (addmm, cdist, matmul, mm, nn.functional.linear) make (CHECK_CASES), and on GPUs on 48 of those again in bfloat16 or float16. Traced in: kernelevolve.aten.recipes:bart (forward), kernelevolve.aten.recipes:bart (train), kernelevolve.aten.recipes:beit (train), kernelevolve.aten.recipes:bert (train), kernelevolve.aten.recipes:bloom (forward), kernelevolve.aten.recipes:bloom (train), kernelevolve.aten.recipes:botnet (forward), kernelevolve.aten.recipes:botnet (train), kernelevolve.aten.recipes:cait (forward), kernelevolve.aten.recipes:cait (train), kernelevolve.aten.recipes:clip (forward), kernelevolve.aten.recipes:clip (train), kernelevolve.aten.recipes:coatnet (train), kernelevolve.aten.recipes:convbert (forward), kernelevolve.aten.recipes:convbert (train), kernelevolve.aten.recipes:convmixer (train), kernelevolve.aten.recipes:convnext_tiny (train), kernelevolve.aten.recipes:crossvit (forward), kernelevolve.aten.recipes:crossvit (train), kernelevolve.aten.recipes:cspdarknet (train), kernelevolve.aten.recipes:deberta (train), kernelevolve.aten.recipes:deformable_detr (forward), kernelevolve.aten.recipes:deformable_detr (train), kernelevolve.aten.recipes:densenet121 (train), kernelevolve.aten.recipes:din (train), kernelevolve.aten.recipes:dinov2_registers (train), kernelevolve.aten.recipes:dlrm (train), kernelevolve.aten.recipes:dlrm_criteo (train), kernelevolve.aten.recipes:edgenext (forward), kernelevolve.aten.recipes:edgenext (train), kernelevolve.aten.recipes:efficientnet_b0 (train), kernelevolve.aten.recipes:efficientvit (forward), kernelevolve.aten.recipes:efficientvit (train), kernelevolve.aten.recipes:encodec (forward), kernelevolve.aten.recipes:encodec (train), kernelevolve.aten.recipes:esm (train), kernelevolve.aten.recipes:eva02 (train), kernelevolve.aten.recipes:fastvit (train), kernelevolve.aten.recipes:funnel (forward), kernelevolve.aten.recipes:funnel (train), kernelevolve.aten.recipes:gemma (forward), kernelevolve.aten.recipes:gemma (train), kernelevolve.aten.recipes:ghostnet (train), kernelevolve.aten.recipes:gmlp (forward), kernelevolve.aten.recipes:gmlp (train), kernelevolve.aten.recipes:gpt2 (forward), kernelevolve.aten.recipes:gpt2 (train), kernelevolve.aten.recipes:gpt2_adamw (forward), kernelevolve.aten.recipes:gpt2_sample (forward), kernelevolve.aten.recipes:gpt_neox (forward), kernelevolve.aten.recipes:gpt_neox (train), kernelevolve.aten.recipes:hgnet (train), kernelevolve.aten.recipes:hrnet (train), kernelevolve.aten.recipes:inception_v3 (train), kernelevolve.aten.recipes:levit (forward), kernelevolve.aten.recipes:levit (train), kernelevolve.aten.recipes:llama (forward), kernelevolve.aten.recipes:llama (train), kernelevolve.aten.recipes:llava (train), kernelevolve.aten.recipes:longformer (forward), kernelevolve.aten.recipes:longformer (train), kernelevolve.aten.recipes:mamba (forward), kernelevolve.aten.recipes:mimi (forward), kernelevolve.aten.recipes:mistral (forward), kernelevolve.aten.recipes:mistral (train), kernelevolve.aten.recipes:mixer (forward), kernelevolve.aten.recipes:mixer (train), kernelevolve.aten.recipes:mixtral (forward), kernelevolve.aten.recipes:mixtral (train), kernelevolve.aten.recipes:mobilenetv3 (train), kernelevolve.aten.recipes:mobilevit (train), kernelevolve.aten.recipes:nf_resnet (train), kernelevolve.aten.recipes:phi (train), kernelevolve.aten.recipes:poolformer (train), kernelevolve.aten.recipes:qwen2_moe (forward), kernelevolve.aten.recipes:qwen2_moe (train), kernelevolve.aten.recipes:regnety (train), kernelevolve.aten.recipes:res2net (train), kernelevolve.aten.recipes:resmlp (forward), kernelevolve.aten.recipes:resmlp (train), kernelevolve.aten.recipes:resnet50 (train), kernelevolve.aten.recipes:rexnet (train), kernelevolve.aten.recipes:rwkv (forward), kernelevolve.aten.recipes:rwkv (train), kernelevolve.aten.recipes:segformer (forward), kernelevolve.aten.recipes:segformer (train), kernelevolve.aten.recipes:sequencer (train), kernelevolve.aten.recipes:siglip (train), kernelevolve.aten.recipes:speech_to_text (train), kernelevolve.aten.recipes:swin_tiny (forward), kernelevolve.aten.recipes:swin_tiny (train), kernelevolve.aten.recipes:switch_transformers (train), kernelevolve.aten.recipes:t5 (forward), kernelevolve.aten.recipes:t5 (train), kernelevolve.aten.recipes:time_series_transformer (train), kernelevolve.aten.recipes:tnt (forward), kernelevolve.aten.recipes:tnt (train), kernelevolve.aten.recipes:tresnet (train), kernelevolve.aten.recipes:twins (forward), kernelevolve.aten.recipes:twins (train), kernelevolve.aten.recipes:vit_hf (train), kernelevolve.aten.recipes:vit_mae (train), kernelevolve.aten.recipes:vit_small (train), kernelevolve.aten.recipes:volo (forward), kernelevolve.aten.recipes:volo (train), kernelevolve.aten.recipes:vovnet (train), kernelevolve.aten.recipes:wav2vec2 (train), kernelevolve.aten.recipes:wav2vec2_conformer (train), kernelevolve.aten.recipes:whisper (forward), kernelevolve.aten.recipes:whisper (train), kernelevolve.aten.recipes:wide_deep (train), kernelevolve.aten.recipes:xcit (forward), kernelevolve.aten.recipes:xcit (train), kernelevolve.aten.recipes:xlnet (train), kernelevolve.aten.recipes:yoso (train).
The inputs are the call's positional arguments, then its keyword arguments as one dict (docs/aten.md).
"""

# Generated by `kernelevolve aten generate` (docs/aten.md): do not edit; regenerate.
import torch
import torch.nn as nn

from kernelevolve.aten.spec import build_call

ATEN_OPERATOR = 'aten::mm.default'
ATEN_VARIANTS = ['aten::mm.out']
TRACED_SHARE = 0.927524  # its largest share of a traced step's time

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
    {'args': [{'t': [768, 32], 'dtype': 'float32', 'stride': [1, 768], 'range': [0.0, 0.0], 'sorted': True}, {'t': [32, 384], 'dtype': 'float32', 'range': [-4.4313530921936035, 4.525577545166016]}], 'kwargs': {}},
    {'args': [{'t': [512, 32], 'dtype': 'float32', 'stride': [1, 512], 'range': [0.0, 0.0], 'sorted': True}, {'t': [32, 384], 'dtype': 'float32', 'range': [-4.4313530921936035, 4.525577545166016]}], 'kwargs': {}},
    {'args': [{'t': [512, 98], 'dtype': 'float32', 'stride': [1, 512], 'range': [0.0, 0.0], 'sorted': True}, {'t': [98, 256], 'dtype': 'float32', 'range': [-6.462508201599121, 5.708857536315918]}], 'kwargs': {}},
    {'args': [{'t': [256, 392], 'dtype': 'float32', 'stride': [1, 256], 'range': [0.0, 0.0], 'sorted': True}, {'t': [392, 128], 'dtype': 'float32', 'range': [-4.237407684326172, 4.80583381652832]}], 'kwargs': {}},
    {'args': [{'t': [2, 3], 'dtype': 'float32', 'range': [-1.0115290880203247, 0.5036107301712036]}, {'t': [3, 2], 'dtype': 'float32', 'stride': [1, 3], 'range': [-3.973021984100342, 5.774446487426758]}], 'kwargs': {}},
    {'args': [{'t': [2, 2], 'dtype': 'float32', 'stride': [1, 2], 'range': [-8.067646980285645, 3.1285104751586914]}, {'t': [2, 3], 'dtype': 'float32', 'range': [-1.0115290880203247, 0.5036107301712036]}], 'kwargs': {}},
    {'args': [{'t': [3, 3], 'dtype': 'float32', 'range': [-1.3705888986587524, 2.1784658432006836]}, {'t': [3, 3], 'dtype': 'float32', 'stride': [1, 3], 'range': [-4.702395439147949, 8.397199630737305]}], 'kwargs': {}},
    {'args': [{'t': [3, 3], 'dtype': 'float32', 'stride': [1, 3], 'range': [-3.973021984100342, 5.774446487426758]}, {'t': [3, 3], 'dtype': 'float32', 'range': [-1.3705888986587524, 2.1784658432006836]}], 'kwargs': {}},
    {'args': [{'t': [2, 3], 'dtype': 'float32', 'range': [-1.4473403692245483, 0.8848397731781006]}, {'t': [3, 2], 'dtype': 'float32', 'stride': [1, 3], 'range': [-8.067646980285645, 5.106744766235352]}], 'kwargs': {}},
    {'args': [{'t': [2, 2], 'dtype': 'float32', 'stride': [1, 2], 'range': [-7.950586795806885, -1.765825867652893]}, {'t': [2, 3], 'dtype': 'float32', 'range': [-1.4473403692245483, 0.8848397731781006]}], 'kwargs': {}},
    {'args': [{'t': [2, 3], 'dtype': 'float32', 'range': [-0.8624942302703857, 0.8737533688545227]}, {'t': [3, 2], 'dtype': 'float32', 'stride': [1, 3], 'range': [-8.067646980285645, 5.106744766235352]}], 'kwargs': {}},
    {'args': [{'t': [2, 2], 'dtype': 'float32', 'stride': [1, 2], 'range': [-7.950586795806885, -1.765825867652893]}, {'t': [2, 3], 'dtype': 'float32', 'range': [-0.8624942302703857, 0.8737533688545227]}], 'kwargs': {}},
    {'args': [{'t': [5, 10], 'dtype': 'float32', 'range': [-2.3331661224365234, 1.5983688831329346]}, {'t': [10, 0], 'dtype': 'float32'}], 'kwargs': {}},
    {'args': [{'t': [0, 5], 'dtype': 'float32'}, {'t': [5, 10], 'dtype': 'float32', 'range': [-2.3331661224365234, 1.5983688831329346]}], 'kwargs': {}},
    {'args': [{'t': [5, 10], 'dtype': 'float32', 'range': [-3.2501485347747803, 2.907862663269043]}, {'t': [10, 0], 'dtype': 'float32'}], 'kwargs': {}},
    {'args': [{'t': [0, 5], 'dtype': 'float32'}, {'t': [5, 10], 'dtype': 'float32', 'range': [-3.2501485347747803, 2.907862663269043]}], 'kwargs': {}},
    {'args': [{'t': [5, 5], 'dtype': 'float32', 'range': [-0.20359036326408386, 0.32940641045570374]}, {'t': [5, 5], 'dtype': 'float32', 'range': [-8.97458267211914, 8.210625648498535]}], 'kwargs': {}},
    {'args': [{'t': [3, 3], 'dtype': 'float32', 'range': [-0.24171853065490723, 0.042195335030555725]}, {'t': [3, 5], 'dtype': 'float32', 'range': [-6.255067825317383, 8.397199630737305]}], 'kwargs': {}},
    {'args': [{'t': [1, 5], 'dtype': 'float32', 'range': [-0.10985927283763885, 1.144096851348877]}, {'t': [5, 1], 'dtype': 'float32', 'range': [-7.950586795806885, 3.611605167388916]}], 'kwargs': {}},
    {'args': [{'t': [5, 1], 'dtype': 'float32', 'range': [-0.10985927283763885, 1.144096851348877]}, {'t': [1, 1], 'dtype': 'float32', 'range': [-8.478373527526855, -8.478373527526855]}], 'kwargs': {}},
    {'args': [{'t': [1, 10], 'dtype': 'float32', 'range': [-8.478373527526855, 3.611605167388916]}, {'t': [10, 5], 'dtype': 'float32', 'range': [-8.97458267211914, 8.397199630737305]}], 'kwargs': {}},
    {'args': [{'t': [10, 1], 'dtype': 'float32', 'range': [-8.478373527526855, 3.611605167388916]}, {'t': [1, 5], 'dtype': 'float32', 'range': [-0.26686057448387146, 2.1784658432006836]}], 'kwargs': {}},
    {'args': [{'t': [5, 10], 'dtype': 'float32', 'range': [-8.97458267211914, 8.397199630737305]}, {'t': [10, 5], 'dtype': 'float32', 'range': [-8.805970191955566, 8.347665786743164]}], 'kwargs': {}},
    {'args': [{'t': [25, 10], 'dtype': 'float32', 'range': [-8.988519668579102, 8.963968276977539]}, {'t': [10, 5], 'dtype': 'float32', 'range': [-7.530536651611328, 8.246907234191895]}], 'kwargs': {}},
    {'args': [{'t': [25, 5], 'dtype': 'float32', 'range': [-2.451477527618408, 1.8001075983047485]}, {'t': [5, 10], 'dtype': 'float32', 'range': [-8.97458267211914, 8.397199630737305]}], 'kwargs': {}},
    {'args': [{'t': [25, 5], 'dtype': 'float32', 'range': [-8.97458267211914, 8.773387908935547]}, {'t': [5, 5], 'dtype': 'float32', 'range': [-7.885776042938232, 8.600601196289062]}], 'kwargs': {}},
    {'args': [{'t': [1, 4], 'dtype': 'float32', 'range': [-1.0115290880203247, 0.4024028182029724]}, {'t': [4, 3], 'dtype': 'float32', 'range': [-1.7928104400634766, 1.283210277557373]}], 'kwargs': {}},
    {'args': [{'t': [4, 1], 'dtype': 'float32', 'range': [-1.0115290880203247, 0.4024028182029724]}, {'t': [1, 3], 'dtype': 'float32', 'range': [-1.8840830326080322, -0.39240574836730957]}], 'kwargs': {}},
]


class Model(nn.Module):
    def forward(self, *inputs):
        *args, kwargs = inputs
        return torch.ops.aten.mm.default(*args, **kwargs)


def get_inputs():
    return build_call(CALLS[CASE])


def get_init_inputs():
    return []
