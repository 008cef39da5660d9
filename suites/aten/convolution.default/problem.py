"""aten::convolution.default: the ATen operator, called as the traced models call it.

Timed on the 4 most called distinct traced calls (SHAPE_CASES); checked on those and on 24 calls
that OpInfo samples (nn.functional.conv1d, nn.functional.conv2d) make (CHECK_CASES), and on GPUs on 48 of those again in bfloat16 or float16. Traced in: kernelevolve.aten.recipes:beit (forward), kernelevolve.aten.recipes:beit (train), kernelevolve.aten.recipes:botnet (forward), kernelevolve.aten.recipes:botnet (train), kernelevolve.aten.recipes:cait (forward), kernelevolve.aten.recipes:cait (train), kernelevolve.aten.recipes:clip (forward), kernelevolve.aten.recipes:clip (train), kernelevolve.aten.recipes:coatnet (forward), kernelevolve.aten.recipes:coatnet (train), kernelevolve.aten.recipes:convbert (forward), kernelevolve.aten.recipes:convbert (train), kernelevolve.aten.recipes:convmixer (forward), kernelevolve.aten.recipes:convmixer (train), kernelevolve.aten.recipes:convnext_tiny (forward), kernelevolve.aten.recipes:convnext_tiny (train), kernelevolve.aten.recipes:crossvit (forward), kernelevolve.aten.recipes:crossvit (train), kernelevolve.aten.recipes:cspdarknet (forward), kernelevolve.aten.recipes:cspdarknet (train), kernelevolve.aten.recipes:deformable_detr (forward), kernelevolve.aten.recipes:deformable_detr (train), kernelevolve.aten.recipes:densenet121 (forward), kernelevolve.aten.recipes:densenet121 (train), kernelevolve.aten.recipes:dinov2_registers (train), kernelevolve.aten.recipes:dla (forward), kernelevolve.aten.recipes:dla (train), kernelevolve.aten.recipes:edgenext (forward), kernelevolve.aten.recipes:edgenext (train), kernelevolve.aten.recipes:efficientnet_b0 (forward), kernelevolve.aten.recipes:efficientnet_b0 (train), kernelevolve.aten.recipes:efficientvit (forward), kernelevolve.aten.recipes:efficientvit (train), kernelevolve.aten.recipes:encodec (forward), kernelevolve.aten.recipes:encodec (train), kernelevolve.aten.recipes:eva02 (forward), kernelevolve.aten.recipes:eva02 (train), kernelevolve.aten.recipes:fastvit (forward), kernelevolve.aten.recipes:fastvit (train), kernelevolve.aten.recipes:ghostnet (forward), kernelevolve.aten.recipes:ghostnet (train), kernelevolve.aten.recipes:gmlp (forward), kernelevolve.aten.recipes:gmlp (train), kernelevolve.aten.recipes:hgnet (forward), kernelevolve.aten.recipes:hgnet (train), kernelevolve.aten.recipes:hrnet (forward), kernelevolve.aten.recipes:hrnet (train), kernelevolve.aten.recipes:inception_v3 (forward), kernelevolve.aten.recipes:inception_v3 (train), kernelevolve.aten.recipes:levit (forward), kernelevolve.aten.recipes:levit (train), kernelevolve.aten.recipes:llava (train), kernelevolve.aten.recipes:mamba (forward), kernelevolve.aten.recipes:mimi (forward), kernelevolve.aten.recipes:mixer (forward), kernelevolve.aten.recipes:mixer (train), kernelevolve.aten.recipes:mobilenetv3 (forward), kernelevolve.aten.recipes:mobilenetv3 (train), kernelevolve.aten.recipes:mobilevit (forward), kernelevolve.aten.recipes:mobilevit (train), kernelevolve.aten.recipes:nf_resnet (forward), kernelevolve.aten.recipes:nf_resnet (train), kernelevolve.aten.recipes:poolformer (forward), kernelevolve.aten.recipes:poolformer (train), kernelevolve.aten.recipes:regnety (forward), kernelevolve.aten.recipes:regnety (train), kernelevolve.aten.recipes:res2net (forward), kernelevolve.aten.recipes:res2net (train), kernelevolve.aten.recipes:resmlp (forward), kernelevolve.aten.recipes:resmlp (train), kernelevolve.aten.recipes:resnet50 (forward), kernelevolve.aten.recipes:resnet50 (train), kernelevolve.aten.recipes:rexnet (forward), kernelevolve.aten.recipes:rexnet (train), kernelevolve.aten.recipes:segformer (forward), kernelevolve.aten.recipes:segformer (train), kernelevolve.aten.recipes:sequencer (forward), kernelevolve.aten.recipes:sequencer (train), kernelevolve.aten.recipes:siglip (train), kernelevolve.aten.recipes:speech_to_text (train), kernelevolve.aten.recipes:swin_tiny (forward), kernelevolve.aten.recipes:swin_tiny (train), kernelevolve.aten.recipes:tnt (forward), kernelevolve.aten.recipes:tnt (train), kernelevolve.aten.recipes:tresnet (forward), kernelevolve.aten.recipes:tresnet (train), kernelevolve.aten.recipes:twins (forward), kernelevolve.aten.recipes:twins (train), kernelevolve.aten.recipes:vit_hf (forward), kernelevolve.aten.recipes:vit_hf (train), kernelevolve.aten.recipes:vit_mae (train), kernelevolve.aten.recipes:vit_small (forward), kernelevolve.aten.recipes:vit_small (train), kernelevolve.aten.recipes:volo (forward), kernelevolve.aten.recipes:volo (train), kernelevolve.aten.recipes:vovnet (forward), kernelevolve.aten.recipes:vovnet (train), kernelevolve.aten.recipes:wav2vec2 (forward), kernelevolve.aten.recipes:wav2vec2 (train), kernelevolve.aten.recipes:wav2vec2_conformer (train), kernelevolve.aten.recipes:whisper (forward), kernelevolve.aten.recipes:whisper (train), kernelevolve.aten.recipes:xcit (forward), kernelevolve.aten.recipes:xcit (train).
The inputs are the call's positional arguments, then its keyword arguments as one dict (docs/aten.md).
"""

# Generated by `kernelevolve aten generate` (docs/aten.md): do not edit; regenerate.
import torch
import torch.nn as nn

from kernelevolve.aten.spec import build_call

ATEN_OPERATOR = 'aten::convolution.default'
ATEN_VARIANTS = ['aten::convolution.out']
TRACED_SHARE = 0.008665  # its largest share of a traced step's time

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
    {'args': [{'t': [2, 3, 224, 224], 'dtype': 'float32', 'range': [-4.501720428466797, 4.9153923988342285]}, {'t': [768, 3, 16, 16], 'dtype': 'float32', 'range': [-0.0360843800008297, 0.03608431667089462]}, {'t': [768], 'dtype': 'float32', 'range': [-0.036041513085365295, 0.035941146314144135]}, [16, 16], [0, 0], [1, 1], False, [0, 0], 1], 'kwargs': {}},
    {'args': [{'t': [2, 3, 224, 224], 'dtype': 'float32', 'range': [-4.557977676391602, 4.724973201751709]}, {'t': [24, 3, 3, 3], 'dtype': 'float32', 'range': [-0.3002946078777313, 0.3033653795719147]}, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 1], 'kwargs': {}},
    {'args': [{'t': [2, 3, 224, 224], 'dtype': 'float32', 'range': [-4.273967742919922, 4.298674583435059]}, {'t': [192, 3, 16, 16], 'dtype': 'float32', 'range': [-0.036083899438381195, 0.0360838882625103]}, {'t': [192], 'dtype': 'float32', 'range': [-0.03579314798116684, 0.03579401969909668]}, [16, 16], [0, 0], [1, 1], False, [0, 0], 1], 'kwargs': {}},
    {'args': [{'t': [2, 3, 224, 224], 'dtype': 'float32', 'range': [-4.455170631408691, 4.675477981567383]}, {'t': [768, 3, 32, 32], 'dtype': 'float32', 'range': [-0.1007961556315422, 0.10863065719604492]}, None, [32, 32], [0, 0], [1, 1], False, [0, 0], 1], 'kwargs': {}},
    {'args': [{'t': [1, 3, 4], 'dtype': 'float32', 'stride': [24, 8, 2], 'offset': 1, 'range': [-8.478373527526855, 5.106744766235352]}, {'t': [3, 3, 3], 'dtype': 'float32', 'stride': [18, 6, 2], 'offset': 1, 'range': [-6.255067825317383, 8.397199630737305]}, {'t': [3], 'dtype': 'float32', 'stride': [2], 'offset': 1, 'range': [-8.97458267211914, -1.605404019355774]}, [2], [2], [1], False, [0], 1], 'kwargs': {}},
    {'args': [{'t': [2, 4, 8], 'dtype': 'float32', 'stride': [64, 16, 2], 'offset': 1, 'range': [-8.97458267211914, 8.397199630737305]}, {'t': [2, 2, 3], 'dtype': 'float32', 'stride': [12, 6, 2], 'offset': 1, 'range': [-8.805970191955566, 8.018885612487793]}, {'t': [2], 'dtype': 'float32', 'stride': [2], 'offset': 1, 'range': [-5.615394592285156, 0.31310606002807617], 'sorted': True}, [3], [1], [2], False, [0], 2], 'kwargs': {}},
    {'args': [{'t': [1, 4, 8], 'dtype': 'float32', 'stride': [64, 16, 2], 'offset': 1, 'range': [-8.478373527526855, 8.397199630737305]}, {'t': [2, 2, 3], 'dtype': 'float32', 'stride': [12, 6, 2], 'offset': 1, 'range': [-8.97458267211914, 8.210625648498535]}, {'t': [2], 'dtype': 'float32', 'stride': [2], 'offset': 1, 'range': [-3.6432604789733887, 3.7379093170166016], 'sorted': True}, [3], [1], [2], False, [0], 2], 'kwargs': {}},
    {'args': [{'t': [1, 3, 4, 4], 'dtype': 'float32', 'stride': [96, 32, 8, 2], 'offset': 1, 'range': [-8.97458267211914, 8.397199630737305]}, {'t': [3, 3, 3, 3], 'dtype': 'float32', 'stride': [54, 18, 6, 2], 'offset': 1, 'range': [-8.883143424987793, 8.773387908935547]}, {'t': [3], 'dtype': 'float32', 'stride': [2], 'offset': 1, 'range': [-3.186859130859375, 5.249946594238281]}, [2, 2], [2, 2], [1, 1], False, [0, 0], 1], 'kwargs': {}},
    {'args': [{'t': [2, 4, 8, 8], 'dtype': 'float32', 'stride': [512, 128, 16, 2], 'offset': 1, 'range': [-8.988519668579102, 8.963968276977539]}, {'t': [2, 2, 3, 3], 'dtype': 'float32', 'stride': [36, 18, 6, 2], 'offset': 1, 'range': [-8.934022903442383, 8.76026725769043]}, {'t': [2], 'dtype': 'float32', 'stride': [2], 'offset': 1, 'range': [-3.74043607711792, 3.078019380569458]}, [3, 2], [2, 1], [4, 4], False, [0, 0], 2], 'kwargs': {}},
    {'args': [{'t': [1, 4, 8, 8], 'dtype': 'float32', 'stride': [512, 128, 16, 2], 'offset': 1, 'range': [-8.988519668579102, 8.963968276977539]}, {'t': [2, 2, 3, 3], 'dtype': 'float32', 'stride': [36, 18, 6, 2], 'offset': 1, 'range': [-7.530536651611328, 8.126194953918457]}, {'t': [2], 'dtype': 'float32', 'stride': [2], 'offset': 1, 'range': [-0.4006619453430176, 5.588583946228027], 'sorted': True}, [3, 2], [2, 1], [4, 4], False, [0, 0], 2], 'kwargs': {}},
    {'args': [{'t': [1, 3, 4], 'dtype': 'float32', 'range': [-8.478373527526855, 5.106744766235352]}, {'t': [3, 3, 3], 'dtype': 'float32', 'range': [-6.255067825317383, 8.397199630737305]}, {'t': [3], 'dtype': 'float32', 'range': [-8.97458267211914, -1.605404019355774]}, [2], [2], [1], False, [0], 1], 'kwargs': {}},
    {'args': [{'t': [2, 4, 8], 'dtype': 'float32', 'range': [-8.97458267211914, 8.397199630737305]}, {'t': [2, 2, 3], 'dtype': 'float32', 'range': [-8.805970191955566, 8.018885612487793]}, {'t': [2], 'dtype': 'float32', 'range': [-5.615394592285156, 0.31310606002807617], 'sorted': True}, [3], [1], [2], False, [0], 2], 'kwargs': {}},
    {'args': [{'t': [1, 4, 8], 'dtype': 'float32', 'range': [-8.478373527526855, 8.397199630737305]}, {'t': [2, 2, 3], 'dtype': 'float32', 'range': [-8.97458267211914, 8.210625648498535]}, {'t': [2], 'dtype': 'float32', 'range': [-3.6432604789733887, 3.7379093170166016], 'sorted': True}, [3], [1], [2], False, [0], 2], 'kwargs': {}},
    {'args': [{'t': [1, 4, 5], 'dtype': 'float32', 'range': [-8.478373527526855, 5.774446487426758]}, {'t': [1, 4, 3], 'dtype': 'float32', 'range': [-6.255067825317383, 8.397199630737305]}, None, [2], [0], [1], False, [0], 1], 'kwargs': {}},
    {'args': [{'t': [2, 2, 4], 'dtype': 'float32', 'range': [-8.478373527526855, 5.774446487426758]}, {'t': [2, 1, 4], 'dtype': 'float32', 'range': [-4.702395439147949, 4.163121223449707]}, {'t': [2], 'dtype': 'float32', 'range': [4.319086074829102, 8.397199630737305]}, [1], [3], [2], False, [0], 2], 'kwargs': {}},
    {'args': [{'t': [1, 2, 4], 'dtype': 'float32', 'range': [-8.478373527526855, 3.611605167388916]}, {'t': [2, 1, 4], 'dtype': 'float32', 'range': [-3.973021984100342, 5.774446487426758]}, {'t': [2], 'dtype': 'float32', 'range': [-3.893850803375244, 2.8211474418640137], 'sorted': True}, [1], [3], [2], False, [0], 2], 'kwargs': {}},
    {'args': [{'t': [1, 4, 5], 'dtype': 'float32', 'range': [-8.478373527526855, 5.774446487426758]}, {'t': [3, 4, 3], 'dtype': 'float32', 'range': [-8.97458267211914, 8.397199630737305]}, None, [1], [0], [1], False, [0], 1], 'kwargs': {}},
    {'args': [{'t': [1, 3, 4, 4], 'dtype': 'float32', 'range': [-8.97458267211914, 8.397199630737305]}, {'t': [3, 3, 3, 3], 'dtype': 'float32', 'range': [-8.883143424987793, 8.773387908935547]}, {'t': [3], 'dtype': 'float32', 'range': [-3.186859130859375, 5.249946594238281]}, [2, 2], [2, 2], [1, 1], False, [0, 0], 1], 'kwargs': {}},
    {'args': [{'t': [2, 4, 8, 8], 'dtype': 'float32', 'range': [-8.988519668579102, 8.963968276977539]}, {'t': [2, 2, 3, 3], 'dtype': 'float32', 'range': [-8.934022903442383, 8.76026725769043]}, {'t': [2], 'dtype': 'float32', 'range': [-3.74043607711792, 3.078019380569458]}, [3, 2], [2, 1], [4, 4], False, [0, 0], 2], 'kwargs': {}},
    {'args': [{'t': [1, 4, 8, 8], 'dtype': 'float32', 'range': [-8.988519668579102, 8.963968276977539]}, {'t': [2, 2, 3, 3], 'dtype': 'float32', 'range': [-7.530536651611328, 8.126194953918457]}, {'t': [2], 'dtype': 'float32', 'range': [-0.4006619453430176, 5.588583946228027], 'sorted': True}, [3, 2], [2, 1], [4, 4], False, [0, 0], 2], 'kwargs': {}},
    {'args': [{'t': [1, 4, 5, 5], 'dtype': 'float32', 'range': [-8.97458267211914, 8.397199630737305]}, {'t': [1, 4, 2, 3], 'dtype': 'float32', 'range': [-8.883143424987793, 8.773387908935547]}, {'t': [1], 'dtype': 'float32', 'range': [-1.9437636137008667, -1.9437636137008667]}, [2, 2], [1, 1], [2, 3], False, [0, 0], 1], 'kwargs': {}},
    {'args': [{'t': [1, 2, 4, 3], 'dtype': 'float32', 'range': [-8.478373527526855, 5.774446487426758]}, {'t': [4, 2, 3, 4], 'dtype': 'float32', 'range': [-8.97458267211914, 8.773387908935547]}, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 1], 'kwargs': {}},
    {'args': [{'t': [1, 4, 5, 5], 'dtype': 'float32', 'range': [-8.97458267211914, 8.397199630737305]}, {'t': [1, 4, 2, 3], 'dtype': 'float32', 'range': [-8.883143424987793, 8.773387908935547]}, {'t': [1], 'dtype': 'float32', 'range': [-1.9437636137008667, -1.9437636137008667]}, [2, 2], [0], [1, 1], False, [0], 1], 'kwargs': {}},
    {'args': [{'t': [1, 4, 6, 5], 'dtype': 'float32', 'range': [-8.97458267211914, 8.397199630737305]}, {'t': [1, 4, 2, 3], 'dtype': 'float32', 'range': [-8.883143424987793, 8.773387908935547]}, {'t': [1], 'dtype': 'float32', 'range': [-1.9437636137008667, -1.9437636137008667]}, [1, 1], [1, 3], [3, 3], False, [0, 0], 1], 'kwargs': {}},
    {'args': [{'t': [2, 4, 6, 6], 'dtype': 'float32', 'range': [-8.988519668579102, 8.963968276977539]}, {'t': [4, 1, 3, 3], 'dtype': 'float32', 'range': [-7.430456161499023, 8.470853805541992]}, {'t': [4], 'dtype': 'float32', 'range': [-3.157970666885376, 5.950839042663574]}, [1, 1], [0, 0], [1, 1], False, [0, 0], 4], 'kwargs': {}},
    {'args': [{'t': [1, 4, 6, 6], 'dtype': 'float32', 'range': [-8.97458267211914, 8.773387908935547]}, {'t': [4, 1, 3, 3], 'dtype': 'float32', 'range': [-7.943257808685303, 8.908514022827148]}, {'t': [4], 'dtype': 'float32', 'range': [-7.944648265838623, 7.124773025512695]}, [1, 1], [0, 0], [1, 1], False, [0, 0], 4], 'kwargs': {}},
    {'args': [{'t': [2, 4, 6, 6], 'dtype': 'float32', 'range': [-8.988519668579102, 8.963968276977539]}, {'t': [8, 1, 3, 3], 'dtype': 'float32', 'range': [-7.820759296417236, 8.687516212463379]}, {'t': [8], 'dtype': 'float32', 'range': [-8.552943229675293, 3.4704060554504395]}, [1, 1], [0, 0], [1, 1], False, [0, 0], 4], 'kwargs': {}},
    {'args': [{'t': [1, 4, 6, 6], 'dtype': 'float32', 'range': [-8.97458267211914, 8.773387908935547]}, {'t': [8, 1, 3, 3], 'dtype': 'float32', 'range': [-8.338794708251953, 8.963968276977539]}, {'t': [8], 'dtype': 'float32', 'range': [-5.8917412757873535, 6.095582962036133]}, [1, 1], [0, 0], [1, 1], False, [0, 0], 4], 'kwargs': {}},
]


class Model(nn.Module):
    def forward(self, *inputs):
        *args, kwargs = inputs
        return torch.ops.aten.convolution.default(*args, **kwargs)


def get_inputs():
    return build_call(CALLS[CASE])


def get_init_inputs():
    return []
