"""aten::mul.Tensor: the ATen operator, called as the traced models call it.

Timed on the 4 most called distinct traced calls (SHAPE_CASES); checked on those and on 24 calls
that OpInfo samples (abs, addcmul, cos, div, exp, linalg.vector_norm, masked.prod, matmul, max, mul, native_group_norm, nn.functional.binary_cross_entropy, nn.functional.binary_cross_entropy_with_logits, pow, prod, reciprocal, rsqrt, sin) make (CHECK_CASES). Traced in: kernelevolve.aten.recipes:bart (forward), kernelevolve.aten.recipes:bart (train), kernelevolve.aten.recipes:beit (forward), kernelevolve.aten.recipes:beit (train), kernelevolve.aten.recipes:bert (forward), kernelevolve.aten.recipes:bert (train), kernelevolve.aten.recipes:bloom (forward), kernelevolve.aten.recipes:bloom (train), kernelevolve.aten.recipes:botnet (forward), kernelevolve.aten.recipes:botnet (train), kernelevolve.aten.recipes:cait (forward), kernelevolve.aten.recipes:cait (train), kernelevolve.aten.recipes:clip (forward), kernelevolve.aten.recipes:clip (train), kernelevolve.aten.recipes:coatnet (forward), kernelevolve.aten.recipes:coatnet (train), kernelevolve.aten.recipes:convbert (forward), kernelevolve.aten.recipes:convbert (train), kernelevolve.aten.recipes:convmixer (train), kernelevolve.aten.recipes:convnext_tiny (forward), kernelevolve.aten.recipes:convnext_tiny (train), kernelevolve.aten.recipes:crossvit (forward), kernelevolve.aten.recipes:crossvit (train), kernelevolve.aten.recipes:cspdarknet (train), kernelevolve.aten.recipes:deberta (forward), kernelevolve.aten.recipes:deberta (train), kernelevolve.aten.recipes:deformable_detr (forward), kernelevolve.aten.recipes:deformable_detr (train), kernelevolve.aten.recipes:densenet121 (train), kernelevolve.aten.recipes:dla (train), kernelevolve.aten.recipes:dlrm (train), kernelevolve.aten.recipes:edgenext (forward), kernelevolve.aten.recipes:edgenext (train), kernelevolve.aten.recipes:efficientnet_b0 (forward), kernelevolve.aten.recipes:efficientnet_b0 (train), kernelevolve.aten.recipes:efficientvit (train), kernelevolve.aten.recipes:encodec (forward), kernelevolve.aten.recipes:encodec (train), kernelevolve.aten.recipes:eva02 (forward), kernelevolve.aten.recipes:eva02 (train), kernelevolve.aten.recipes:fastvit (forward), kernelevolve.aten.recipes:fastvit (train), kernelevolve.aten.recipes:funnel (forward), kernelevolve.aten.recipes:funnel (train), kernelevolve.aten.recipes:gemma (forward), kernelevolve.aten.recipes:gemma (train), kernelevolve.aten.recipes:ghostnet (forward), kernelevolve.aten.recipes:ghostnet (train), kernelevolve.aten.recipes:gmlp (forward), kernelevolve.aten.recipes:gmlp (train), kernelevolve.aten.recipes:gpt2 (forward), kernelevolve.aten.recipes:gpt2 (train), kernelevolve.aten.recipes:gpt_neox (forward), kernelevolve.aten.recipes:gpt_neox (train), kernelevolve.aten.recipes:hgnet (forward), kernelevolve.aten.recipes:hgnet (train), kernelevolve.aten.recipes:hrnet (train), kernelevolve.aten.recipes:inception_v3 (train), kernelevolve.aten.recipes:levit (forward), kernelevolve.aten.recipes:levit (train), kernelevolve.aten.recipes:llama (forward), kernelevolve.aten.recipes:llama (train), kernelevolve.aten.recipes:longformer (forward), kernelevolve.aten.recipes:longformer (train), kernelevolve.aten.recipes:mamba (forward), kernelevolve.aten.recipes:mistral (forward), kernelevolve.aten.recipes:mistral (train), kernelevolve.aten.recipes:mixer (train), kernelevolve.aten.recipes:mixtral (forward), kernelevolve.aten.recipes:mixtral (train), kernelevolve.aten.recipes:mobilenetv3 (forward), kernelevolve.aten.recipes:mobilenetv3 (train), kernelevolve.aten.recipes:mobilevit (train), kernelevolve.aten.recipes:nf_resnet (forward), kernelevolve.aten.recipes:nf_resnet (train), kernelevolve.aten.recipes:phi (forward), kernelevolve.aten.recipes:phi (train), kernelevolve.aten.recipes:poolformer (forward), kernelevolve.aten.recipes:poolformer (train), kernelevolve.aten.recipes:qwen2_moe (forward), kernelevolve.aten.recipes:qwen2_moe (train), kernelevolve.aten.recipes:regnety (forward), kernelevolve.aten.recipes:regnety (train), kernelevolve.aten.recipes:res2net (train), kernelevolve.aten.recipes:resmlp (forward), kernelevolve.aten.recipes:resmlp (train), kernelevolve.aten.recipes:resnet50 (train), kernelevolve.aten.recipes:rexnet (forward), kernelevolve.aten.recipes:rexnet (train), kernelevolve.aten.recipes:rwkv (forward), kernelevolve.aten.recipes:rwkv (train), kernelevolve.aten.recipes:segformer (train), kernelevolve.aten.recipes:sequencer (train), kernelevolve.aten.recipes:swin_tiny (forward), kernelevolve.aten.recipes:swin_tiny (train), kernelevolve.aten.recipes:t5 (forward), kernelevolve.aten.recipes:t5 (train), kernelevolve.aten.recipes:tnt (forward), kernelevolve.aten.recipes:tnt (train), kernelevolve.aten.recipes:tresnet (forward), kernelevolve.aten.recipes:tresnet (train), kernelevolve.aten.recipes:twins (train), kernelevolve.aten.recipes:vit_hf (train), kernelevolve.aten.recipes:vit_small (train), kernelevolve.aten.recipes:volo (forward), kernelevolve.aten.recipes:volo (train), kernelevolve.aten.recipes:vovnet (train), kernelevolve.aten.recipes:wav2vec2 (train), kernelevolve.aten.recipes:whisper (forward), kernelevolve.aten.recipes:whisper (train), kernelevolve.aten.recipes:xcit (forward), kernelevolve.aten.recipes:xcit (train), kernelevolve.aten.recipes:xlnet (forward), kernelevolve.aten.recipes:xlnet (train).
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
CHECK_CASES = [{'CASE': 4}, {'CASE': 5}, {'CASE': 6}, {'CASE': 7}, {'CASE': 8}, {'CASE': 9}, {'CASE': 10}, {'CASE': 11}, {'CASE': 12}, {'CASE': 13}, {'CASE': 14}, {'CASE': 15}, {'CASE': 16}, {'CASE': 17}, {'CASE': 18}, {'CASE': 19}, {'CASE': 20}, {'CASE': 21}, {'CASE': 22}, {'CASE': 23}, {'CASE': 24}, {'CASE': 25}, {'CASE': 26}, {'CASE': 27}]
CALLS = [
    {'args': [{'t': [1, 256, 1, 1], 'dtype': 'float32', 'range': [1.0, 1.0]}, {'t': [1, 256, 1, 1], 'dtype': 'float32', 'range': [0.9999949932098389, 0.9999949932098389]}], 'kwargs': {}},
    {'args': [{'t': [2, 196, 384], 'dtype': 'float32', 'range': [0.0, 0.0], 'sorted': True}, {'t': [384], 'dtype': 'float32', 'range': [9.999999747378752e-05, 9.999999747378752e-05], 'sorted': True}], 'kwargs': {}},
    {'args': [{'t': [1, 512, 1, 1], 'dtype': 'float32', 'range': [1.0, 1.0]}, {'t': [1, 512, 1, 1], 'dtype': 'float32', 'range': [0.9999949932098389, 0.9999949932098389]}], 'kwargs': {}},
    {'args': [{'t': [2, 768], 'dtype': 'float32', 'range': [0.0, 0.0], 'sorted': True}, {'t': [2, 768], 'dtype': 'float32', 'range': [0.0, 0.0], 'sorted': True}], 'kwargs': {}},
    {'args': [{'t': [0, 10, 3], 'dtype': 'float32'}, {'t': [0, 1, 3], 'dtype': 'float32'}], 'kwargs': {}},
    {'args': [{'t': [0, 10, 3], 'dtype': 'float32'}, {'t': [0, 10, 3], 'dtype': 'float32'}], 'kwargs': {}},
    {'args': [{'t': [0], 'dtype': 'float32'}, {'t': [0], 'dtype': 'float32'}], 'kwargs': {}},
    {'args': [{'t': [1, 0, 3], 'dtype': 'float32'}, {'t': [1, 0, 3], 'dtype': 'float32'}], 'kwargs': {}},
    {'args': [{'t': [2], 'dtype': 'float32', 'stride': [2], 'offset': 1, 'range': [0.5247066020965576, 2.3385977745056152]}, {'t': [2], 'dtype': 'float32', 'range': [0.1654626578092575, 1.8941515684127808], 'sorted': True}], 'kwargs': {}},
    {'args': [{'t': [2], 'dtype': 'float32', 'stride': [2], 'offset': 1, 'range': [4.213253021240234, 6.305802345275879]}, {'t': [2, 2], 'dtype': 'float32', 'range': [46.34683609008789, 917.3653564453125]}], 'kwargs': {}},
    {'args': [{'t': [2], 'dtype': 'float32', 'stride': [2], 'offset': 1, 'range': [4.213253021240234, 6.305802345275879]}, {'t': [1, 2], 'dtype': 'float32', 'range': [46.34683609008789, 917.3653564453125]}], 'kwargs': {}},
    {'args': [{'t': [2], 'dtype': 'float32', 'stride': [2], 'offset': 1, 'range': [6.13539981842041, 7.387223243713379]}, {'t': [3, 2], 'dtype': 'float32', 'range': [459.8564758300781, 128268.546875]}], 'kwargs': {}},
    {'args': [{'t': [2], 'dtype': 'float32', 'stride': [2], 'offset': 1, 'range': [6.13539981842041, 7.387223243713379]}, {'t': [1, 3, 2], 'dtype': 'float32', 'range': [459.8564758300781, 128268.546875]}], 'kwargs': {}},
    {'args': [{'t': [3, 2], 'dtype': 'float32', 'stride': [4, 2], 'offset': 1, 'range': [2.7389559745788574, 7.387223243713379]}, {'t': [1, 3, 2], 'dtype': 'float32', 'range': [6.690229415893555, 8456.373046875]}], 'kwargs': {}},
    {'args': [{'t': [3, 2], 'dtype': 'float32', 'stride': [4, 2], 'offset': 1, 'range': [2.7389559745788574, 7.387223243713379]}, {'t': [3, 3, 2], 'dtype': 'float32', 'range': [6.690229415893555, 128268.546875]}], 'kwargs': {}},
    {'args': [{'t': [1, 3, 2], 'dtype': 'float32', 'stride': [12, 4, 2], 'offset': 1, 'range': [2.7389559745788574, 7.387223243713379]}, {'t': [3, 3, 2], 'dtype': 'float32', 'range': [6.690229415893555, 128268.546875]}], 'kwargs': {}},
    {'args': [{'t': [], 'dtype': 'float32', 'range': [0.0077412850223481655, 0.0077412850223481655]}, {'t': [], 'dtype': 'float32', 'range': [-1.3439509868621826, -1.3439509868621826]}], 'kwargs': {}},
    {'args': [{'t': [], 'dtype': 'float32', 'range': [0.9863808751106262, 0.9863808751106262]}, {'t': [], 'dtype': 'float32', 'range': [-0.010403907857835293, -0.010403907857835293]}], 'kwargs': {}},
    {'args': [{'t': [], 'dtype': 'float32', 'range': [3.6170871257781982, 3.6170871257781982]}, {'t': [], 'dtype': 'float32', 'range': [0.029681341722607613, 0.029681341722607613]}], 'kwargs': {}},
    {'args': [{'t': [], 'dtype': 'float32', 'range': [0.9863808751106262, 0.9863808751106262]}, {'t': [], 'dtype': 'float32', 'range': [0.10735999792814255, 0.10735999792814255]}], 'kwargs': {}},
    {'args': [{'t': [5], 'dtype': 'float32', 'range': [0.00020868411229457706, 3318.1904296875]}, {'t': [5], 'dtype': 'float32', 'range': [-1.3439509868621826, 1.2856690883636475]}], 'kwargs': {}},
    {'args': [{'t': [5], 'dtype': 'float32', 'range': [-0.8544751405715942, 0.6607316732406616]}, {'t': [5], 'dtype': 'float32', 'range': [-0.011049741879105568, 4266.0947265625]}], 'kwargs': {}},
    {'args': [{'t': [], 'dtype': 'float32', 'range': [6.305802345275879, 6.305802345275879]}, {'t': [5], 'dtype': 'float32', 'range': [0.0008001286769285798, 917.3653564453125]}], 'kwargs': {}},
    {'args': [{'t': [5], 'dtype': 'float32', 'range': [-0.8544751405715942, 0.6607316732406616]}, {'t': [5], 'dtype': 'float32', 'range': [0.0050454530864953995, 5784.724609375]}], 'kwargs': {}},
    {'args': [{'t': [5, 5], 'dtype': 'float32', 'range': [0.00020868411229457706, 3318.1904296875]}, {'t': [5, 1], 'dtype': 'float32', 'range': [-1.3439509868621826, 1.2856690883636475]}], 'kwargs': {}},
    {'args': [{'t': [5, 5], 'dtype': 'float32', 'range': [-1.6023621559143066, 1.1531999111175537]}, {'t': [5, 5], 'dtype': 'float32', 'range': [-0.7182736992835999, 4266.0947265625]}], 'kwargs': {}},
    {'args': [{'t': [5], 'dtype': 'float32', 'range': [0.46617650985717773, 6.305802345275879]}, {'t': [5, 5], 'dtype': 'float32', 'range': [0.0008001286769285798, 917.3653564453125]}], 'kwargs': {}},
    {'args': [{'t': [5, 5], 'dtype': 'float32', 'range': [-1.6023621559143066, 1.1531999111175537]}, {'t': [5, 5], 'dtype': 'float32', 'range': [0.0050454530864953995, 5784.724609375]}], 'kwargs': {}},
]


class Model(nn.Module):
    def forward(self, *inputs):
        *args, kwargs = inputs
        return torch.ops.aten.mul.Tensor(*args, **kwargs)


def get_inputs():
    return build_call(CALLS[CASE])


def get_init_inputs():
    return []
