"""Bundled models for the tracer: built from their configs with random weights, nothing downloaded
(docs/aten.md, "Recipes"). Each recipe returns (model, example_inputs) as `kernelevolve trace` expects.

Transformers and vision models need the `models` extra (`pip install -e ".[models]"`: transformers, timm); the
DLRM-style model needs torch alone. Sizes: hidden sizes as the released models have them, few layers, short
sequences and small batches, so most traces take under a minute on a CPU.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn as nn

BATCH = 2
SEQ = 128
IMAGE = 224

# More timm architectures, for the operators the five above do not call (pooling variants, other activations and
# norms, upsampling, attention forms): recipe name -> (timm model name, create_model keyword arguments).
TIMM = {
    "mixer": ("mixer_b16_224", {}),
    "regnety": ("regnety_008", {}),
    "densenet121": ("densenet121", {}),
    "poolformer": ("poolformer_s12", {}),
    "nf_resnet": ("nf_resnet26", {}),
    "levit": ("levit_128s", {}),
    "mobilevit": ("mobilevit_s", {}),
    "ghostnet": ("ghostnet_100", {}),
    "hrnet": ("hrnet_w18_small", {}),
    "inception_v3": ("inception_v3", {}),
    "coatnet": ("coatnet_0_rw_224", {}),
    "xcit": ("xcit_tiny_12_p16_224", {"depth": 2}),
    "eva02": ("eva02_tiny_patch14_224", {"depth": 2}),
    "beit": ("beit_base_patch16_224", {"depth": 2}),
    "edgenext": ("edgenext_small", {}),
    "fastvit": ("fastvit_t8", {}),
    "efficientvit": ("efficientvit_b0", {}),
    "cspdarknet": ("cspdarknet53", {}),
    "volo": ("volo_d1_224", {}),
    "gmlp": ("gmlp_s16_224", {}),
    "sequencer": ("sequencer2d_s", {}),
    "tresnet": ("tresnet_m", {}),
    "dla": ("dla34", {}),
    "res2net": ("res2net50_26w_4s", {}),
    "rexnet": ("rexnet_100", {}),
    "crossvit": ("crossvit_9_240", {"img_size": 240}),
    "cait": ("cait_xxs24_224", {"depth": 2}),
    "twins": ("twins_svt_small", {}),
    "tnt": ("tnt_s_patch16_224", {"depth": 2}),
    "botnet": ("botnet26t_256", {"img_size": 224}),
    "resmlp": ("resmlp_12_224", {}),
    "convmixer": ("convmixer_768_32", {}),
    "vovnet": ("vovnet39a", {}),
    "hgnet": ("hgnet_tiny", {}),
}

RECIPES = (
    "llama",
    "gpt2",
    "bert",
    "t5",
    "vit_hf",
    "mistral",
    "bloom",
    "whisper",
    "bart",
    "deberta",
    "wav2vec2",
    "segformer",
    "clip",
    "mamba",
    "gpt_neox",
    "mixtral",
    "qwen2_moe",
    "gemma",
    "phi",
    "rwkv",
    "encodec",
    "xlnet",
    "funnel",
    "longformer",
    "deformable_detr",
    "convbert",
    "resnet50",
    "convnext_tiny",
    "efficientnet_b0",
    "vit_small",
    "swin_tiny",
    "mobilenetv3",
    *TIMM,
    "dlrm",
)
# Added for operators the others do not call; traced as a training step only (its forward's operators are in it).
TRAIN_ONLY = (
    "wav2vec2_conformer",
    "switch_transformers",
    "time_series_transformer",
    "vit_mae",
    "speech_to_text",
    "siglip",
    "esm",
    "dinov2_registers",
    "yoso",
    "llava",
    "dlrm_criteo",
    "wide_deep",
)
# Whole steps as one forward (an optimiser's update, generation), traced forward only; and the others traced
# forward only: mamba, whose reference selective scan (no mamba_ssm kernels on a CPU) takes minutes a step, mimi.
STEPS = ("gpt2_adamw", "gpt2_sample")
FORWARD = (*RECIPES, "din", "mimi", *STEPS)
TRAINED = (*(r for r in RECIPES if r != "mamba"), "din", *TRAIN_ONLY)
RECIPES = (*RECIPES, *TRAIN_ONLY, "din", "mimi", *STEPS)  # every recipe


def _tokens(vocab: int, seq: int = SEQ) -> torch.Tensor:
    return torch.randint(0, vocab, (BATCH, seq))


def _seeded() -> None:
    torch.manual_seed(0)


def llama() -> tuple[nn.Module, dict[str, Any]]:
    from transformers import LlamaConfig, LlamaForCausalLM

    _seeded()
    cfg = LlamaConfig(
        vocab_size=32000,
        hidden_size=1024,
        intermediate_size=2816,
        num_hidden_layers=2,
        num_attention_heads=16,
        num_key_value_heads=4,
        max_position_embeddings=2048,
        attn_implementation="eager",
    )
    ids = _tokens(32000)
    return LlamaForCausalLM(cfg), {"input_ids": ids, "labels": ids, "use_cache": False}


def gpt2() -> tuple[nn.Module, dict[str, Any]]:
    from transformers import GPT2Config, GPT2LMHeadModel

    _seeded()
    cfg = GPT2Config(n_embd=768, n_layer=2, n_head=12, attn_implementation="eager")
    ids = _tokens(cfg.vocab_size)
    return GPT2LMHeadModel(cfg), {"input_ids": ids, "labels": ids, "use_cache": False}


def bert() -> tuple[nn.Module, dict[str, Any]]:
    from transformers import BertConfig, BertForSequenceClassification

    _seeded()
    cfg = BertConfig(hidden_size=768, num_hidden_layers=2, num_attention_heads=12, attn_implementation="eager")
    ids = _tokens(cfg.vocab_size)
    mask = torch.ones_like(ids)
    mask[:, SEQ - 16 :] = 0  # padded tails: the attention mask does work
    return BertForSequenceClassification(cfg), {"input_ids": ids, "attention_mask": mask}


def t5() -> tuple[nn.Module, dict[str, Any]]:
    from transformers import T5Config, T5ForConditionalGeneration

    _seeded()
    cfg = T5Config(d_model=512, d_ff=2048, num_layers=2, num_decoder_layers=2, num_heads=8, vocab_size=32128)
    ids = _tokens(cfg.vocab_size)
    return T5ForConditionalGeneration(cfg), {
        "input_ids": ids,
        "decoder_input_ids": _tokens(cfg.vocab_size, SEQ // 2),
        "use_cache": False,
    }


def vit_hf() -> tuple[nn.Module, dict[str, Any]]:
    from transformers import ViTConfig, ViTForImageClassification

    _seeded()
    cfg = ViTConfig(hidden_size=768, num_hidden_layers=2, num_attention_heads=12, image_size=IMAGE, num_labels=1000)
    return ViTForImageClassification(cfg), {"pixel_values": torch.randn(BATCH, 3, IMAGE, IMAGE)}


def mistral() -> tuple[nn.Module, dict[str, Any]]:
    from transformers import MistralConfig, MistralForCausalLM

    _seeded()
    cfg = MistralConfig(
        vocab_size=32000,
        hidden_size=1024,
        intermediate_size=3584,
        num_hidden_layers=2,
        num_attention_heads=16,
        num_key_value_heads=8,
        sliding_window=64,
        attn_implementation="eager",
    )
    return MistralForCausalLM(cfg), {"input_ids": _tokens(32000), "use_cache": False}


def bloom() -> tuple[nn.Module, dict[str, Any]]:
    from transformers import BloomConfig, BloomForCausalLM

    _seeded()
    cfg = BloomConfig(vocab_size=32000, hidden_size=1024, n_layer=2, n_head=16)
    return BloomForCausalLM(cfg), {"input_ids": _tokens(32000), "use_cache": False}


def gpt_neox() -> tuple[nn.Module, dict[str, Any]]:
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    _seeded()
    cfg = GPTNeoXConfig(
        vocab_size=32000, hidden_size=1024, intermediate_size=4096, num_hidden_layers=2, num_attention_heads=16
    )
    cfg._attn_implementation = "eager"
    return GPTNeoXForCausalLM(cfg), {"input_ids": _tokens(32000), "use_cache": False}


def whisper() -> tuple[nn.Module, dict[str, Any]]:
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    _seeded()
    cfg = WhisperConfig(
        d_model=512,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=8,
        decoder_attention_heads=8,
        max_source_positions=750,
        attn_implementation="eager",
    )
    features = torch.randn(BATCH, cfg.num_mel_bins, 2 * cfg.max_source_positions)
    return WhisperForConditionalGeneration(cfg), {
        "input_features": features,
        "decoder_input_ids": _tokens(cfg.vocab_size, 32),
        "use_cache": False,
    }


def bart() -> tuple[nn.Module, dict[str, Any]]:
    from transformers import BartConfig, BartForConditionalGeneration

    _seeded()
    cfg = BartConfig(d_model=768, encoder_layers=2, decoder_layers=2, attn_implementation="eager")
    ids = _tokens(cfg.vocab_size)
    return BartForConditionalGeneration(cfg), {"input_ids": ids, "labels": _tokens(cfg.vocab_size, SEQ // 2)}


def deberta() -> tuple[nn.Module, dict[str, Any]]:
    from transformers import DebertaV2Config, DebertaV2ForSequenceClassification

    _seeded()
    cfg = DebertaV2Config(  # DeBERTa-v3's attention: log-bucketed relative positions, both directions
        hidden_size=768,
        num_hidden_layers=2,
        num_attention_heads=12,
        vocab_size=32000,
        relative_attention=True,
        position_buckets=256,
        max_relative_positions=-1,
        norm_rel_ebd="layer_norm",
        share_att_key=True,
        pos_att_type=["p2c", "c2p"],
        num_labels=16,
        problem_type="multi_label_classification",  # its loss: binary cross-entropy with logits
    )
    labels = torch.randint(0, 2, (BATCH, 16)).float()
    return DebertaV2ForSequenceClassification(cfg), {"input_ids": _tokens(32000), "labels": labels}


def wav2vec2() -> tuple[nn.Module, dict[str, Any]]:
    from transformers import Wav2Vec2Config, Wav2Vec2ForCTC

    _seeded()
    cfg = Wav2Vec2Config(hidden_size=768, num_hidden_layers=2, num_attention_heads=12, vocab_size=32)
    labels = torch.randint(1, cfg.vocab_size, (BATCH, 20))  # transcripts: its CTC loss is in the step
    return Wav2Vec2ForCTC(cfg), {"input_values": torch.randn(BATCH, 16000), "labels": labels}


def segformer() -> tuple[nn.Module, dict[str, Any]]:
    from transformers import SegformerConfig, SegformerForSemanticSegmentation

    _seeded()
    cfg = SegformerConfig(num_labels=19)
    labels = torch.randint(0, cfg.num_labels, (BATCH, 256, 256))  # per-pixel classes: a 2-d cross-entropy
    return SegformerForSemanticSegmentation(cfg), {"pixel_values": torch.randn(BATCH, 3, 256, 256), "labels": labels}


def clip() -> tuple[nn.Module, dict[str, Any]]:
    from transformers import CLIPConfig, CLIPModel

    _seeded()
    cfg = CLIPConfig(
        text_config={"hidden_size": 512, "num_hidden_layers": 2, "num_attention_heads": 8},
        vision_config={"hidden_size": 768, "num_hidden_layers": 2, "num_attention_heads": 12},
    )
    ids = _tokens(cfg.text_config.vocab_size, 77)
    return CLIPModel(cfg), {"input_ids": ids, "pixel_values": torch.randn(BATCH, 3, IMAGE, IMAGE)}


def mamba() -> tuple[nn.Module, dict[str, Any]]:
    from transformers import MambaConfig, MambaForCausalLM

    _seeded()
    cfg = MambaConfig(vocab_size=32000, hidden_size=768, num_hidden_layers=2, state_size=16)
    return MambaForCausalLM(cfg), {"input_ids": _tokens(32000), "use_cache": False}


def _causal_lm(config: str, model: str, **cfg: Any) -> tuple[nn.Module, dict[str, Any]]:
    """A decoder-only language model from transformers, hidden size 1024, 2 layers, with labels (its loss)."""
    import transformers

    _seeded()
    made = getattr(transformers, config)(vocab_size=32000, num_hidden_layers=2, **cfg)
    made._attn_implementation = "eager"
    ids = _tokens(32000)
    return getattr(transformers, model)(made), {"input_ids": ids, "labels": ids, "use_cache": False}


def mixtral() -> tuple[nn.Module, dict[str, Any]]:
    """A mixture of experts: top-2 routing over 8 experts (topk, softmax, index_add, one_hot)."""
    return _causal_lm(
        "MixtralConfig",
        "MixtralForCausalLM",
        hidden_size=1024,
        intermediate_size=1792,
        num_attention_heads=16,
        num_key_value_heads=8,
        num_local_experts=8,
        num_experts_per_tok=2,
    )


def qwen2_moe() -> tuple[nn.Module, dict[str, Any]]:
    return _causal_lm(
        "Qwen2MoeConfig",
        "Qwen2MoeForCausalLM",
        hidden_size=1024,
        intermediate_size=2816,
        moe_intermediate_size=512,
        shared_expert_intermediate_size=1024,
        num_attention_heads=16,
        num_key_value_heads=16,
        num_experts=16,
        num_experts_per_tok=4,
    )


def gemma() -> tuple[nn.Module, dict[str, Any]]:
    return _causal_lm(
        "GemmaConfig",
        "GemmaForCausalLM",
        hidden_size=1024,
        intermediate_size=4096,
        num_attention_heads=8,
        num_key_value_heads=1,
        head_dim=128,
    )


def phi() -> tuple[nn.Module, dict[str, Any]]:
    return _causal_lm("PhiConfig", "PhiForCausalLM", hidden_size=1024, intermediate_size=4096, num_attention_heads=16)


def rwkv() -> tuple[nn.Module, dict[str, Any]]:
    from transformers import RwkvConfig, RwkvForCausalLM

    _seeded()
    cfg = RwkvConfig(vocab_size=32000, hidden_size=768, num_hidden_layers=2, attention_hidden_size=768)
    return RwkvForCausalLM(cfg), {"input_ids": _tokens(32000), "use_cache": False}


def encodec() -> tuple[nn.Module, dict[str, Any]]:
    """A neural audio codec: convolutions, LSTMs and residual vector quantisation."""
    from transformers import EncodecConfig, EncodecModel

    _seeded()
    return EncodecModel(EncodecConfig()), {"input_values": torch.randn(BATCH, 1, 24000)}


def xlnet() -> tuple[nn.Module, dict[str, Any]]:
    from transformers import XLNetConfig, XLNetLMHeadModel

    _seeded()
    cfg = XLNetConfig(vocab_size=32000, d_model=768, n_layer=2, n_head=12)
    return XLNetLMHeadModel(cfg), {"input_ids": _tokens(32000), "use_mems": False}


def funnel() -> tuple[nn.Module, dict[str, Any]]:
    from transformers import FunnelConfig, FunnelForSequenceClassification

    _seeded()
    cfg = FunnelConfig(vocab_size=32000, block_sizes=[1, 1, 1], d_model=768, n_head=12, num_labels=1)
    cfg.problem_type = "regression"  # its loss: mean squared error
    return FunnelForSequenceClassification(cfg), {"input_ids": _tokens(32000), "labels": torch.randn(BATCH, 1)}


def longformer() -> tuple[nn.Module, dict[str, Any]]:
    from transformers import LongformerConfig, LongformerForMaskedLM

    _seeded()
    cfg = LongformerConfig(
        vocab_size=32000, hidden_size=768, num_hidden_layers=2, num_attention_heads=12, attention_window=64
    )
    ids = _tokens(32000, 256)
    return LongformerForMaskedLM(cfg), {"input_ids": ids, "labels": ids}


def deformable_detr() -> tuple[nn.Module, dict[str, Any]]:
    """Object detection with multi-scale deformable attention (grid sampling) over an HF ResNet-50 backbone built
    from its config (no timm, no download)."""
    from transformers import DeformableDetrConfig, DeformableDetrModel, ResNetConfig

    _seeded()
    backbone = ResNetConfig(out_features=["stage2", "stage3", "stage4"])
    cfg = DeformableDetrConfig(
        use_timm_backbone=False, backbone_config=backbone, encoder_layers=2, decoder_layers=2, num_queries=100
    )
    return DeformableDetrModel(cfg), {"pixel_values": torch.randn(BATCH, 3, 320, 320)}


def convbert() -> tuple[nn.Module, dict[str, Any]]:
    """Span-based dynamic convolution beside self-attention (unfold, depthwise conv1d)."""
    from transformers import ConvBertConfig, ConvBertForMaskedLM

    _seeded()
    cfg = ConvBertConfig(vocab_size=32000, hidden_size=768, num_hidden_layers=2, num_attention_heads=12)
    ids = _tokens(32000)
    return ConvBertForMaskedLM(cfg), {"input_ids": ids, "labels": ids}


def wav2vec2_conformer() -> tuple[nn.Module, dict[str, Any]]:
    """Speech recognition with conformer blocks (gated linear units, depthwise convolutions, rotary positions)."""
    from transformers import Wav2Vec2ConformerConfig, Wav2Vec2ConformerForCTC

    _seeded()
    cfg = Wav2Vec2ConformerConfig(
        hidden_size=768, num_hidden_layers=2, num_attention_heads=12, vocab_size=32, position_embeddings_type="rotary"
    )
    labels = torch.randint(1, cfg.vocab_size, (BATCH, 20))
    return Wav2Vec2ConformerForCTC(cfg), {"input_values": torch.randn(BATCH, 16000), "labels": labels}


def switch_transformers() -> tuple[nn.Module, dict[str, Any]]:
    """A sparse encoder-decoder (top-1 routing over 8 experts) with its router losses (the z-loss: logsumexp)."""
    from transformers import SwitchTransformersConfig, SwitchTransformersForConditionalGeneration

    _seeded()
    cfg = SwitchTransformersConfig(
        vocab_size=32128,
        d_model=512,
        d_ff=2048,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=8,
        num_experts=8,
        encoder_sparse_step=1,
        decoder_sparse_step=1,
        decoder_start_token_id=0,
        pad_token_id=0,
    )
    return SwitchTransformersForConditionalGeneration(cfg), {
        "input_ids": _tokens(cfg.vocab_size),
        "labels": _tokens(cfg.vocab_size, SEQ // 2),
        "output_router_logits": True,
        "use_cache": False,
    }


def time_series_transformer() -> tuple[nn.Module, dict[str, Any]]:
    """Probabilistic forecasting: a Student's t output whose negative log-likelihood is the loss (lgamma, log1p;
    digamma in its backward), over mean-scaled lagged values."""
    from transformers import TimeSeriesTransformerConfig, TimeSeriesTransformerForPrediction

    _seeded()
    lags, context, horizon, batch = [1, 2, 3, 7, 14], 96, 24, 32
    cfg = TimeSeriesTransformerConfig(
        prediction_length=horizon,
        context_length=context,
        lags_sequence=lags,
        num_time_features=2,
        d_model=64,
        encoder_ffn_dim=128,
        decoder_ffn_dim=128,
        distribution_output="student_t",
    )
    past = context + max(lags)
    return TimeSeriesTransformerForPrediction(cfg), {
        "past_values": torch.rand(batch, past) * 100,
        "past_time_features": torch.randn(batch, past, 2),
        "past_observed_mask": torch.ones(batch, past),
        "future_values": torch.rand(batch, horizon) * 100,
        "future_time_features": torch.randn(batch, horizon, 2),
    }


def vit_mae() -> tuple[nn.Module, dict[str, Any]]:
    """Masked-autoencoder pre-training with normalised pixel targets (var); the masking noise is given."""
    from transformers import ViTMAEConfig, ViTMAEForPreTraining

    _seeded()
    cfg = ViTMAEConfig(
        hidden_size=768, num_hidden_layers=2, num_attention_heads=12, decoder_num_hidden_layers=2, norm_pix_loss=True
    )
    patches = (IMAGE // cfg.patch_size) ** 2
    return ViTMAEForPreTraining(cfg), {
        "pixel_values": torch.randn(BATCH, 3, IMAGE, IMAGE),
        "noise": torch.rand(BATCH, patches),
    }


def speech_to_text() -> tuple[nn.Module, dict[str, Any]]:
    """Speech translation over filterbank features, subsampled by convolutions with gated linear units."""
    from transformers import Speech2TextConfig, Speech2TextForConditionalGeneration

    _seeded()
    cfg = Speech2TextConfig(vocab_size=10000, d_model=256, encoder_layers=2, decoder_layers=2)
    return Speech2TextForConditionalGeneration(cfg), {
        "input_features": torch.randn(BATCH, 584, cfg.input_feat_per_channel),
        "labels": _tokens(cfg.vocab_size, 32),
    }


def siglip() -> tuple[nn.Module, dict[str, Any]]:
    """Image-text pre-training with SigLIP's pairwise sigmoid loss (log-sigmoid)."""
    from transformers import SiglipConfig, SiglipModel

    _seeded()
    cfg = SiglipConfig(
        text_config={"hidden_size": 768, "num_hidden_layers": 2, "num_attention_heads": 12, "vocab_size": 32000},
        vision_config={"hidden_size": 768, "num_hidden_layers": 2, "num_attention_heads": 12, "image_size": IMAGE},
    )
    return SiglipModel(cfg), {
        "input_ids": _tokens(32000, 64),
        "pixel_values": torch.randn(BATCH, 3, IMAGE, IMAGE),
        "return_loss": True,
    }


def esm() -> tuple[nn.Module, dict[str, Any]]:
    """A protein language model (ESM-2 35M's sizes, 2 layers): masked-token loss, erf-based GELU, rotary."""
    from transformers import EsmConfig, EsmForMaskedLM

    _seeded()
    cfg = EsmConfig(
        vocab_size=33,
        hidden_size=480,
        num_hidden_layers=2,
        num_attention_heads=20,
        intermediate_size=1920,
        position_embedding_type="rotary",
        pad_token_id=1,
        mask_token_id=32,
        token_dropout=True,
    )
    ids = torch.randint(4, 24, (BATCH, SEQ))  # amino-acid tokens
    return EsmForMaskedLM(cfg), {"input_ids": ids, "labels": ids}


def mimi() -> tuple[nn.Module, dict[str, Any]]:
    """A streaming audio codec: convolutions, a transformer, and split residual vector quantisation (cdist)."""
    from transformers import MimiConfig, MimiModel

    _seeded()
    cfg = MimiConfig(num_hidden_layers=2)
    return MimiModel(cfg), {"input_values": torch.randn(BATCH, 1, 24000)}


def dinov2_registers() -> tuple[nn.Module, dict[str, Any]]:
    """DINOv2 with registers (its 518-pixel position grid, 2 layers) on 224-pixel images: the position
    embeddings resized by antialiased bicubic interpolation on every forward."""
    from transformers import Dinov2WithRegistersConfig, Dinov2WithRegistersModel

    _seeded()
    cfg = Dinov2WithRegistersConfig(num_hidden_layers=2, image_size=518)
    return Dinov2WithRegistersModel(cfg), {"pixel_values": torch.randn(BATCH, 3, IMAGE, IMAGE)}


def yoso() -> tuple[nn.Module, dict[str, Any]]:
    """YOSO: BERT with attention as the expected collision of LSH hashes (arccos of the angles)."""
    from transformers import YosoConfig, YosoForMaskedLM

    _seeded()
    cfg = YosoConfig(vocab_size=32000, hidden_size=768, num_hidden_layers=2, num_attention_heads=12)
    ids = _tokens(32000)
    return YosoForMaskedLM(cfg), {"input_ids": ids, "labels": ids}


def llava() -> tuple[nn.Module, dict[str, Any]]:
    """A vision-language model: CLIP patch features projected into a decoder's embeddings at the image tokens
    (masked_scatter), with the language-modelling loss."""
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig, LlavaForConditionalGeneration

    _seeded()
    vision = CLIPVisionConfig(hidden_size=1024, intermediate_size=4096, num_hidden_layers=2, num_attention_heads=16)
    vision.patch_size, vision.image_size = 14, IMAGE
    text = LlamaConfig(
        vocab_size=32064, hidden_size=1024, intermediate_size=2816, num_hidden_layers=2, num_attention_heads=16
    )
    patches = (IMAGE // 14) ** 2
    cfg = LlavaConfig(vision_config=vision, text_config=text, image_token_index=32000, image_seq_length=patches)
    text_ids = _tokens(32000, 64)
    image = torch.full((BATCH, patches), 32000)
    ids = torch.cat([text_ids[:, :8], image, text_ids[:, 8:]], dim=1)
    return LlavaForConditionalGeneration(cfg), {
        "input_ids": ids,
        "pixel_values": torch.randn(BATCH, 3, IMAGE, IMAGE),
        "labels": ids,
        "use_cache": False,
    }


def _timm(name: str, **kwargs: Any) -> tuple[nn.Module, tuple[torch.Tensor]]:
    import timm

    _seeded()
    model = timm.create_model(name, pretrained=False, **kwargs)
    return model, (torch.randn(BATCH, 3, IMAGE, IMAGE),)


def resnet50() -> tuple[nn.Module, tuple[torch.Tensor]]:
    return _timm("resnet50")


def convnext_tiny() -> tuple[nn.Module, tuple[torch.Tensor]]:
    return _timm("convnext_tiny")


def efficientnet_b0() -> tuple[nn.Module, tuple[torch.Tensor]]:
    return _timm("efficientnet_b0")


def vit_small() -> tuple[nn.Module, tuple[torch.Tensor]]:
    return _timm("vit_small_patch16_224", depth=4)


def swin_tiny() -> tuple[nn.Module, tuple[torch.Tensor]]:
    return _timm("swin_tiny_patch4_window7_224", depths=(2, 2, 2, 2))


def mobilenetv3() -> tuple[nn.Module, tuple[torch.Tensor]]:
    return _timm("mobilenetv3_large_100")


def _timm_recipe(recipe: str, name: str, kwargs: dict[str, Any]) -> Any:
    def make() -> tuple[nn.Module, tuple[torch.Tensor]]:
        return _timm(name, **kwargs)

    make.__name__ = make.__qualname__ = recipe
    make.__doc__ = f"timm's {name} (pretrained=False)."
    return make


for _recipe, (_name, _kwargs) in TIMM.items():  # each a module-level recipe, as `kernelevolve trace` names it
    globals()[_recipe] = _timm_recipe(_recipe, _name, _kwargs)


class DLRM(nn.Module):
    """A DLRM-style ranking model: a bottom MLP over dense features, pooled embedding bags for the sparse ones,
    pairwise dot-product interaction, a top MLP to one logit (the structure of Naumov et al., 2019)."""

    def __init__(self, dense: int = 13, tables: tuple[int, ...] = (100_000,) * 8, dim: int = 128) -> None:
        super().__init__()
        self.bottom = nn.Sequential(nn.Linear(dense, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU())
        self.bottom.append(nn.Linear(256, dim))
        self.bags = nn.ModuleList(nn.EmbeddingBag(rows, dim, mode="sum") for rows in tables)
        n = len(tables) + 1
        pairs = n * (n - 1) // 2
        self.top = nn.Sequential(nn.Linear(pairs + dim, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU())
        self.top.append(nn.Linear(256, 1))
        rows, cols = torch.triu_indices(n, n, offset=1)
        self.register_buffer("rows", rows, persistent=False)
        self.register_buffer("cols", cols, persistent=False)

    def forward(
        self, dense: torch.Tensor, indices: torch.Tensor, offsets: torch.Tensor, labels: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Click probabilities; given labels, the binary cross-entropy loss a training step takes."""
        x = self.bottom(dense)
        pooled = [bag(indices[i], offsets[i]) for i, bag in enumerate(self.bags)]
        features = torch.stack([x, *pooled], dim=1)  # [B, n, dim]
        dots = torch.bmm(features, features.transpose(1, 2))[:, self.rows, self.cols]
        p = torch.sigmoid(self.top(torch.cat([x, dots], dim=1))).squeeze(1)
        return p if labels is None else nn.functional.binary_cross_entropy(p, labels)


def dlrm() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    _seeded()
    batch, pooling, tables = 512, 20, 8
    model = DLRM(tables=(100_000,) * tables)
    lengths = torch.randint(1, 2 * pooling, (tables, batch))
    offsets = torch.zeros(tables, batch, dtype=torch.int64)
    offsets[:, 1:] = lengths.cumsum(dim=1)[:, :-1]
    total = int(lengths.sum(dim=1).max())
    indices = torch.randint(0, 100_000, (tables, total))
    labels = torch.randint(0, 2, (batch,)).float()
    return model, (torch.randn(batch, 13), indices, offsets, labels)


class CriteoDLRM(nn.Module):
    """DLRM over raw Criteo-style features, preprocessed inside the model as the reference pipeline does: dense
    counts clamped at zero and log(1 + x)-transformed, categorical ids hashed into each table by modulo."""

    def __init__(self, rows: int = 100_000, tables: int = 8) -> None:
        super().__init__()
        self.rows = rows
        self.dlrm = DLRM(tables=(rows,) * tables)

    def forward(
        self, counts: torch.Tensor, ids: torch.Tensor, offsets: torch.Tensor, labels: torch.Tensor
    ) -> torch.Tensor:
        dense = torch.log1p(counts.clamp_min(0))
        return self.dlrm(dense, ids.remainder(self.rows), offsets, labels)


def dlrm_criteo() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    model, (dense, indices, offsets, labels) = dlrm()
    counts = torch.randint(-2, 10_000, dense.shape).float()  # raw counts; Criteo's have a few negative values
    hashed = torch.randint(0, 2**31 - 1, indices.shape)
    _seeded()
    return CriteoDLRM(), (counts, hashed, offsets, labels)


class DIN(nn.Module):
    """Deep Interest Network (Zhou et al., 2018): the candidate item attends over the user's behaviour sequence
    through a local activation unit (an MLP with PReLU over both embeddings, their difference and product); the
    weighted sum of the behaviours, the candidate and their product feed an MLP with PReLU to the click logit."""

    def __init__(self, items: int = 100_000, dim: int = 64) -> None:
        super().__init__()
        self.items = nn.Embedding(items, dim)
        self.attention = nn.Sequential(nn.Linear(4 * dim, 80), nn.PReLU(), nn.Linear(80, 40), nn.PReLU())
        self.attention.append(nn.Linear(40, 1))
        self.mlp = nn.Sequential(nn.Linear(3 * dim, 200), nn.PReLU(), nn.Linear(200, 80), nn.PReLU())
        self.mlp.append(nn.Linear(80, 1))

    def forward(
        self, history: torch.Tensor, lengths: torch.Tensor, candidate: torch.Tensor, labels: torch.Tensor
    ) -> torch.Tensor:
        behaviours = self.items(history)  # [B, T, dim]
        target = self.items(candidate)  # [B, dim]
        paired = target.unsqueeze(1).expand_as(behaviours)
        features = torch.cat([behaviours, paired, behaviours - paired, behaviours * paired], dim=-1)
        weights = self.attention(features).squeeze(-1)
        valid = torch.arange(history.shape[1], device=history.device) < lengths.unsqueeze(1)
        interest = (weights.masked_fill(~valid, 0.0).unsqueeze(-1) * behaviours).sum(dim=1)
        logit = self.mlp(torch.cat([interest, target, interest * target], dim=-1)).squeeze(-1)
        return nn.functional.binary_cross_entropy_with_logits(logit, labels)


def din() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    _seeded()
    batch, seq = 512, 100
    history = torch.randint(0, 100_000, (batch, seq))
    lengths = torch.randint(1, seq + 1, (batch,))
    candidate = torch.randint(0, 100_000, (batch,))
    return DIN(), (history, lengths, candidate, torch.randint(0, 2, (batch,)).float())


class WideDeep(nn.Module):
    """Wide & Deep (Cheng et al., 2016) over raw features: missing dense values filled with zero, dense values
    bucketized for the wide part beside a crossed feature (two ids hashed together: xor, then modulo), and the
    deep part an MLP over the ids' embeddings and the log-transformed dense values; one click logit."""

    def __init__(self, rows: int = 100_000, dense: int = 13, sparse: int = 26, dim: int = 16) -> None:
        super().__init__()
        self.rows = rows
        self.register_buffer("borders", torch.logspace(0, 4, 31), persistent=False)  # 32 buckets per value
        self.register_buffer("first", torch.arange(dense) * 32, persistent=False)
        self.wide = nn.EmbeddingBag(dense * 32 + rows, 1, mode="sum")
        self.embeddings = nn.Embedding(rows, dim)
        self.deep = nn.Sequential(nn.Linear(sparse * dim + dense, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU())
        self.deep.append(nn.Linear(256, 1))

    def forward(self, counts: torch.Tensor, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        counts = torch.nan_to_num(counts, nan=0.0)
        buckets = torch.bucketize(counts, self.borders) + self.first
        crossed = torch.bitwise_xor(ids[:, 0] * 1_000_003, ids[:, 1]).remainder(self.rows) + self.first[-1] + 32
        wide = self.wide(torch.cat([buckets, crossed.unsqueeze(1)], dim=1)).squeeze(1)
        hashed = self.embeddings(ids.remainder(self.rows)).flatten(1)
        deep = self.deep(torch.cat([hashed, torch.log1p(counts.clamp_min(0))], dim=1)).squeeze(1)
        return nn.functional.binary_cross_entropy_with_logits(wide + deep, labels)


def wide_deep() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    _seeded()
    batch = 512
    counts = torch.randint(-2, 10_000, (batch, 13)).float()
    counts[torch.rand(batch, 13) < 0.1] = float("nan")  # missing values, as Criteo's
    ids = torch.randint(0, 2**31 - 1, (batch, 26))
    return WideDeep(), (counts, ids, torch.randint(0, 2, (batch,)).float())


class OptimizerStep(nn.Module):
    """A whole training step as one forward: the model's loss, backward, gradient clipping and the optimiser's
    update (traced without --train: the step is inside). The tracer's warm-up call makes the optimiser's state,
    so the traced step is a steady one."""

    def __init__(self, model: nn.Module, optimizer: type[torch.optim.Optimizer], **options: Any) -> None:
        super().__init__()
        self.model = model
        self.optimizer = optimizer(model.parameters(), foreach=False, **options)  # one tensor at a time

    def forward(self, *args: Any, **kwargs: Any) -> torch.Tensor:
        with torch.enable_grad():
            out = self.model(*args, **kwargs)
            loss = out if isinstance(out, torch.Tensor) else out.loss
            loss.backward()
            nn.utils.clip_grad_norm_(self.model.parameters(), 1.0, foreach=False)
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
        return loss.detach()


def gpt2_adamw() -> tuple[nn.Module, dict[str, Any]]:
    """gpt2's training step with AdamW (weight decay) and gradient clipping."""
    model, inputs = gpt2()
    return OptimizerStep(model, torch.optim.AdamW, lr=1e-4, weight_decay=0.01), inputs


class Generate(nn.Module):
    """Text generation with a key-value cache, 8 new tokens, as `generate` runs it with the given options (the
    decoding strategy: sampling's logits processors, beam search)."""

    def __init__(self, model: nn.Module, **options: Any) -> None:
        super().__init__()
        self.model = model
        self.options = {"max_new_tokens": 8, "min_new_tokens": 8, "pad_token_id": 0, **options}

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model.generate(input_ids, attention_mask=torch.ones_like(input_ids), **self.options)


def gpt2_sample() -> tuple[nn.Module, tuple[torch.Tensor]]:
    """gpt2 sampling: temperature, top-k, top-p and a repetition penalty."""
    model, inputs = gpt2()
    options = {"do_sample": True, "temperature": 0.8, "top_k": 50, "top_p": 0.9, "repetition_penalty": 1.3}
    return Generate(model, **options), (inputs["input_ids"],)
