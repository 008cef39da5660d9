"""aten::add.Tensor: the ATen operator, called as the traced models call it.

Timed on the 4 most called distinct traced calls (SHAPE_CASES); checked on those and on 24 calls
that OpInfo samples (add, native_group_norm, nn.functional.linear, nn.functional.pad) make (CHECK_CASES). Traced in: kernelevolve.aten.recipes:bart (forward), kernelevolve.aten.recipes:bart (train), kernelevolve.aten.recipes:beit (forward), kernelevolve.aten.recipes:beit (train), kernelevolve.aten.recipes:bert (forward), kernelevolve.aten.recipes:bert (train), kernelevolve.aten.recipes:bloom (forward), kernelevolve.aten.recipes:bloom (train), kernelevolve.aten.recipes:botnet (forward), kernelevolve.aten.recipes:botnet (train), kernelevolve.aten.recipes:cait (forward), kernelevolve.aten.recipes:cait (train), kernelevolve.aten.recipes:clip (forward), kernelevolve.aten.recipes:clip (train), kernelevolve.aten.recipes:coatnet (forward), kernelevolve.aten.recipes:coatnet (train), kernelevolve.aten.recipes:convbert (forward), kernelevolve.aten.recipes:convbert (train), kernelevolve.aten.recipes:convmixer (forward), kernelevolve.aten.recipes:convmixer (train), kernelevolve.aten.recipes:convnext_tiny (forward), kernelevolve.aten.recipes:convnext_tiny (train), kernelevolve.aten.recipes:crossvit (forward), kernelevolve.aten.recipes:crossvit (train), kernelevolve.aten.recipes:cspdarknet (forward), kernelevolve.aten.recipes:cspdarknet (train), kernelevolve.aten.recipes:deberta (forward), kernelevolve.aten.recipes:deberta (train), kernelevolve.aten.recipes:deformable_detr (forward), kernelevolve.aten.recipes:deformable_detr (train), kernelevolve.aten.recipes:densenet121 (train), kernelevolve.aten.recipes:dla (forward), kernelevolve.aten.recipes:dla (train), kernelevolve.aten.recipes:dlrm (train), kernelevolve.aten.recipes:edgenext (forward), kernelevolve.aten.recipes:edgenext (train), kernelevolve.aten.recipes:efficientnet_b0 (forward), kernelevolve.aten.recipes:efficientnet_b0 (train), kernelevolve.aten.recipes:efficientvit (forward), kernelevolve.aten.recipes:efficientvit (train), kernelevolve.aten.recipes:encodec (forward), kernelevolve.aten.recipes:encodec (train), kernelevolve.aten.recipes:eva02 (forward), kernelevolve.aten.recipes:eva02 (train), kernelevolve.aten.recipes:fastvit (forward), kernelevolve.aten.recipes:fastvit (train), kernelevolve.aten.recipes:funnel (forward), kernelevolve.aten.recipes:funnel (train), kernelevolve.aten.recipes:gemma (forward), kernelevolve.aten.recipes:gemma (train), kernelevolve.aten.recipes:ghostnet (forward), kernelevolve.aten.recipes:ghostnet (train), kernelevolve.aten.recipes:gmlp (forward), kernelevolve.aten.recipes:gmlp (train), kernelevolve.aten.recipes:gpt2 (forward), kernelevolve.aten.recipes:gpt2 (train), kernelevolve.aten.recipes:gpt_neox (forward), kernelevolve.aten.recipes:gpt_neox (train), kernelevolve.aten.recipes:hgnet (forward), kernelevolve.aten.recipes:hgnet (train), kernelevolve.aten.recipes:hrnet (forward), kernelevolve.aten.recipes:hrnet (train), kernelevolve.aten.recipes:inception_v3 (train), kernelevolve.aten.recipes:levit (forward), kernelevolve.aten.recipes:levit (train), kernelevolve.aten.recipes:llama (forward), kernelevolve.aten.recipes:llama (train), kernelevolve.aten.recipes:longformer (forward), kernelevolve.aten.recipes:longformer (train), kernelevolve.aten.recipes:mamba (forward), kernelevolve.aten.recipes:mistral (forward), kernelevolve.aten.recipes:mistral (train), kernelevolve.aten.recipes:mixer (forward), kernelevolve.aten.recipes:mixer (train), kernelevolve.aten.recipes:mixtral (forward), kernelevolve.aten.recipes:mixtral (train), kernelevolve.aten.recipes:mobilenetv3 (forward), kernelevolve.aten.recipes:mobilenetv3 (train), kernelevolve.aten.recipes:mobilevit (forward), kernelevolve.aten.recipes:mobilevit (train), kernelevolve.aten.recipes:nf_resnet (forward), kernelevolve.aten.recipes:nf_resnet (train), kernelevolve.aten.recipes:phi (forward), kernelevolve.aten.recipes:phi (train), kernelevolve.aten.recipes:poolformer (forward), kernelevolve.aten.recipes:poolformer (train), kernelevolve.aten.recipes:qwen2_moe (forward), kernelevolve.aten.recipes:qwen2_moe (train), kernelevolve.aten.recipes:regnety (forward), kernelevolve.aten.recipes:regnety (train), kernelevolve.aten.recipes:res2net (forward), kernelevolve.aten.recipes:res2net (train), kernelevolve.aten.recipes:resmlp (forward), kernelevolve.aten.recipes:resmlp (train), kernelevolve.aten.recipes:resnet50 (forward), kernelevolve.aten.recipes:resnet50 (train), kernelevolve.aten.recipes:rexnet (forward), kernelevolve.aten.recipes:rexnet (train), kernelevolve.aten.recipes:rwkv (forward), kernelevolve.aten.recipes:rwkv (train), kernelevolve.aten.recipes:segformer (forward), kernelevolve.aten.recipes:segformer (train), kernelevolve.aten.recipes:sequencer (forward), kernelevolve.aten.recipes:sequencer (train), kernelevolve.aten.recipes:swin_tiny (forward), kernelevolve.aten.recipes:swin_tiny (train), kernelevolve.aten.recipes:t5 (forward), kernelevolve.aten.recipes:t5 (train), kernelevolve.aten.recipes:tnt (forward), kernelevolve.aten.recipes:tnt (train), kernelevolve.aten.recipes:tresnet (forward), kernelevolve.aten.recipes:tresnet (train), kernelevolve.aten.recipes:twins (forward), kernelevolve.aten.recipes:twins (train), kernelevolve.aten.recipes:vit_hf (forward), kernelevolve.aten.recipes:vit_hf (train), kernelevolve.aten.recipes:vit_small (forward), kernelevolve.aten.recipes:vit_small (train), kernelevolve.aten.recipes:volo (forward), kernelevolve.aten.recipes:volo (train), kernelevolve.aten.recipes:vovnet (train), kernelevolve.aten.recipes:wav2vec2 (forward), kernelevolve.aten.recipes:wav2vec2 (train), kernelevolve.aten.recipes:whisper (forward), kernelevolve.aten.recipes:whisper (train), kernelevolve.aten.recipes:xcit (forward), kernelevolve.aten.recipes:xcit (train), kernelevolve.aten.recipes:xlnet (forward), kernelevolve.aten.recipes:xlnet (train).
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
CHECK_CASES = [{'CASE': 4}, {'CASE': 5}, {'CASE': 6}, {'CASE': 7}, {'CASE': 8}, {'CASE': 9}, {'CASE': 10}, {'CASE': 11}, {'CASE': 12}, {'CASE': 13}, {'CASE': 14}, {'CASE': 15}, {'CASE': 16}, {'CASE': 17}, {'CASE': 18}, {'CASE': 19}, {'CASE': 20}, {'CASE': 21}, {'CASE': 22}, {'CASE': 23}, {'CASE': 24}, {'CASE': 25}, {'CASE': 26}, {'CASE': 27}]
CALLS = [
    {'args': [{'t': [], 'dtype': 'int64', 'range': [1, 1]}, 1], 'kwargs': {}},
    {'args': [{'t': [128], 'dtype': 'int64', 'range': [0, 127], 'sorted': True}, 0], 'kwargs': {}},
    {'args': [{'t': [1, 256, 1, 1], 'dtype': 'float32', 'range': [1.0, 1.0]}, 1e-05], 'kwargs': {}},
    {'args': [{'t': [2, 196, 256], 'dtype': 'float32', 'range': [0.0, 0.0], 'sorted': True}, {'t': [2, 196, 256], 'dtype': 'float32', 'range': [0.0, 0.0], 'sorted': True}], 'kwargs': {}},
    {'args': [{'t': [0, 1, 2], 'dtype': 'float32'}, {'t': [0, 1, 2], 'dtype': 'float32'}], 'kwargs': {}},
    {'args': [{'t': [0, 2], 'dtype': 'float32'}, {'t': [0, 2], 'dtype': 'float32'}], 'kwargs': {}},
    {'args': [{'t': [4], 'dtype': 'float32', 'range': [-1.7267754077911377, 2.7599644660949707]}, {'t': [4], 'dtype': 'float32', 'stride': [2], 'offset': 1, 'range': [-1.0449767112731934, 0.726844310760498]}], 'kwargs': {}},
    {'args': [{'t': [2, 3, 4], 'dtype': 'float32', 'range': [-3.7068886756896973, 3.4536657333374023]}, {'t': [4], 'dtype': 'float32', 'stride': [2], 'offset': 1, 'range': [-0.7134411334991455, 1.1571617126464844]}], 'kwargs': {}},
    {'args': [{'t': [0, 1, 3], 'dtype': 'float32'}, {'t': [0, 10, 3], 'dtype': 'float32'}], 'kwargs': {}},
    {'args': [{'t': [0], 'dtype': 'float32'}, {'t': [0], 'dtype': 'float32'}], 'kwargs': {}},
    {'args': [{'t': [1, 0, 3], 'dtype': 'float32'}, {'t': [1, 0, 3], 'dtype': 'float32'}], 'kwargs': {}},
    {'args': [{'t': [2], 'dtype': 'float32', 'stride': [2], 'offset': 1, 'range': [-2.400455951690674, -1.765825867652893]}, {'t': [], 'dtype': 'float32', 'range': [-7.950586795806885, -7.950586795806885]}], 'kwargs': {}},
    {'args': [{'t': [1], 'dtype': 'float32', 'range': [-8.478373527526855, -8.478373527526855]}, {'t': [2], 'dtype': 'float32', 'stride': [2], 'offset': 1, 'range': [-7.950586795806885, -4.3228044509887695]}], 'kwargs': {}},
    {'args': [{'t': [2, 1], 'dtype': 'float32', 'stride': [2, 2], 'offset': 1, 'range': [-2.400455951690674, -1.765825867652893]}, {'t': [2], 'dtype': 'float32', 'stride': [2], 'offset': 1, 'range': [-0.5734938383102417, 3.611605167388916]}], 'kwargs': {}},
    {'args': [{'t': [1, 2], 'dtype': 'float32', 'stride': [4, 2], 'offset': 1, 'range': [-2.400455951690674, -1.765825867652893]}, {'t': [2], 'dtype': 'float32', 'stride': [2], 'offset': 1, 'range': [-0.5734938383102417, 3.611605167388916]}], 'kwargs': {}},
    {'args': [{'t': [3, 2], 'dtype': 'float32', 'stride': [4, 2], 'offset': 1, 'range': [-3.033684730529785, 3.611605167388916]}, {'t': [2], 'dtype': 'float32', 'stride': [2], 'offset': 1, 'range': [3.270799398422241, 5.774446487426758]}], 'kwargs': {}},
    {'args': [{'t': [1, 2, 9], 'dtype': 'float32', 'range': [-0.0049796272069215775, 0.0057567572221159935]}, {'t': [1, 2, 9], 'dtype': 'float32', 'range': [0.05951649695634842, 0.17487314343452454], 'sorted': True}], 'kwargs': {}},
    {'args': [{'t': [1, 6, 3], 'dtype': 'float32', 'range': [-2.06777286529541, 2.2778899669647217]}, {'t': [1, 6, 3], 'dtype': 'float32', 'range': [0.05453687161207199, 0.1806298941373825]}], 'kwargs': {}},
    {'args': [{'t': [1, 2, 9], 'dtype': 'float32', 'range': [-0.0073885852470994, 0.00885733962059021]}, {'t': [1, 2, 9], 'dtype': 'float32', 'range': [-0.08985760807991028, -0.002411064924672246], 'sorted': True}], 'kwargs': {}},
    {'args': [{'t': [1, 6, 3], 'dtype': 'float32', 'range': [-1.9186420440673828, 1.4722111225128174]}, {'t': [1, 6, 3], 'dtype': 'float32', 'range': [-0.0972461923956871, -0.0016719750128686428]}], 'kwargs': {}},
    {'args': [{'t': [1, 2, 9], 'dtype': 'float32', 'range': [-0.004997412208467722, 0.004152842331677675]}, {'t': [1, 2, 9], 'dtype': 'float32', 'range': [-0.02577107585966587, 0.06826310604810715], 'sorted': True}], 'kwargs': {}},
    {'args': [{'t': [1, 6, 3], 'dtype': 'float32', 'range': [-1.7178856134414673, 2.122673749923706]}, {'t': [1, 6, 3], 'dtype': 'float32', 'range': [-0.030768487602472305, 0.0700998529791832]}], 'kwargs': {}},
    {'args': [{'t': [1, 2, 9], 'dtype': 'float32', 'range': [-0.008306189440190792, 0.009957351721823215]}, {'t': [1, 2, 9], 'dtype': 'float32', 'range': [-0.16782189905643463, 0.007609587628394365], 'sorted': True}], 'kwargs': {}},
    {'args': [{'t': [1, 6, 3], 'dtype': 'float32', 'range': [-2.4065277576446533, 4.0258870124816895]}, {'t': [1, 6, 3], 'dtype': 'float32', 'range': [-0.16979680955410004, 0.017566939815878868]}], 'kwargs': {}},
    {'args': [{'t': [2, 2, 9], 'dtype': 'float32', 'range': [-0.020051060244441032, 0.02041536569595337]}, {'t': [2, 2, 9], 'dtype': 'float32', 'range': [-0.2614569067955017, 0.13036911189556122], 'sorted': True}], 'kwargs': {}},
    {'args': [{'t': [2, 6, 3], 'dtype': 'float32', 'range': [-2.071488380432129, 5.113711357116699]}, {'t': [2, 6, 3], 'dtype': 'float32', 'range': [-0.26594293117523193, 0.13459593057632446]}], 'kwargs': {}},
    {'args': [{'t': [2, 2, 9], 'dtype': 'float32', 'range': [-0.020329274237155914, 0.014501865953207016]}, {'t': [2, 2, 9], 'dtype': 'float32', 'range': [-0.24786636233329773, 0.07609933614730835], 'sorted': True}], 'kwargs': {}},
    {'args': [{'t': [2, 6, 3], 'dtype': 'float32', 'range': [-1.7548701763153076, 2.6397194862365723]}, {'t': [2, 6, 3], 'dtype': 'float32', 'range': [-0.2527015507221222, 0.07726943492889404]}], 'kwargs': {}},
]


class Model(nn.Module):
    def forward(self, *inputs):
        *args, kwargs = inputs
        return torch.ops.aten.add.Tensor(*args, **kwargs)


def get_inputs():
    return build_call(CALLS[CASE])


def get_init_inputs():
    return []
