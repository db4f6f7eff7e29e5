"""The model families of scripts/golden_families.py: each one's real config fields, what the
golden shrinks, and its tiny tokenizer (pre-tokenizer regexes and special tokens as the real
tokenizer.json files have them)."""

# Pre-tokenizer regexes of the real tokenizer.json files (Split, then ByteLevel without regex).
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
               r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                   "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>",
                   "<|reserved_special_token_2|>", "<|start_header_id|>", "<|end_header_id|>",
                   "<|eom_id|>", "<|eot_id|>"]
QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
PHI3_ADDED = ["<|endoftext|>", "<|assistant|>", "<|placeholder1|>", "<|placeholder2|>",
              "<|placeholder3|>", "<|placeholder4|>", "<|system|>", "<|end|>",
              "<|placeholder5|>", "<|placeholder6|>", "<|user|>"]

# ----------------------------------------------------------------------------- families
# `real`: the fields of the model's config.json on the Hub that shape the computation.
# `shrink`: what this script changes. vocab_size and the special token ids come from the tiny
# tokenizer (`vocab_pad`: extra embedding rows past the tokenizer, as the real model has).

FAMILIES = {
    "llama3": dict(
        real_model="meta-llama/Llama-3.2-1B", gguf_arch="llama",
        real={"architectures": ["LlamaForCausalLM"], "model_type": "llama",
              "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
              "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64,
              "hidden_act": "silu", "max_position_embeddings": 131072, "rms_norm_eps": 1e-5,
              "rope_theta": 500000.0, "tie_word_embeddings": True, "attention_bias": False,
              "mlp_bias": False, "vocab_size": 128256,
              "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                               "original_max_position_embeddings": 8192,
                               "rope_type": "llama3"}},
        # head_dim 16 keeps all three llama3 bands (factor 1, smoothed, factor 32) at base 5e5.
        shrink={"hidden_size": 32, "intermediate_size": 96, "num_hidden_layers": 3,
                "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16},
        tokenizer=dict(kind="bpe", regex=LLAMA3_REGEX, n_bpe=320, specials=LLAMA3_SPECIALS,
                       bos="<|begin_of_text|>", eos="<|end_of_text|>", add_bos=True,
                       pre="llama-bpe"),
        seed=1),
    "mistral": dict(
        real_model="mistralai/Mistral-7B-v0.3", gguf_arch="llama",
        real={"architectures": ["MistralForCausalLM"], "model_type": "mistral",
              "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
              "num_attention_heads": 32, "num_key_value_heads": 8, "hidden_act": "silu",
              "max_position_embeddings": 32768, "rms_norm_eps": 1e-5, "rope_theta": 1000000.0,
              "sliding_window": None, "tie_word_embeddings": False, "vocab_size": 32768},
        shrink={"hidden_size": 32, "intermediate_size": 112, "num_hidden_layers": 3,
                "num_attention_heads": 4, "num_key_value_heads": 1},
        tokenizer=dict(kind="spm", vocab=384, unk=0, bos=1, eos=2, pad=-1, add_dummy_prefix=True,
                       control=["[INST]", "[/INST]", "[TOOL_CALLS]", "[AVAILABLE_TOOLS]"],
                       user=[]),
        seed=2),
    "qwen2": dict(
        real_model="Qwen/Qwen2.5-0.5B", gguf_arch="qwen2",
        real={"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
              "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
              "num_attention_heads": 14, "num_key_value_heads": 2, "hidden_act": "silu",
              "max_position_embeddings": 32768, "max_window_layers": 24, "rms_norm_eps": 1e-6,
              "rope_theta": 1000000.0, "sliding_window": 32768, "use_sliding_window": False,
              "tie_word_embeddings": True, "vocab_size": 151936},
        # 3 heads of 16 over n_embd 48: head counts that are not powers of two, as 14 and 2.
        shrink={"hidden_size": 48, "intermediate_size": 96, "num_hidden_layers": 3,
                "num_attention_heads": 3, "num_key_value_heads": 1, "max_window_layers": 3},
        tokenizer=dict(kind="bpe", regex=QWEN2_REGEX, n_bpe=320, specials=QWEN_SPECIALS,
                       bos=None, eos="<|endoftext|>", add_bos=False, pre="qwen2", vocab_pad=13),
        seed=3),
    "qwen3": dict(
        real_model="Qwen/Qwen3-0.6B", gguf_arch="qwen3",
        real={"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
              "hidden_size": 1024, "intermediate_size": 3072, "num_hidden_layers": 28,
              "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
              "hidden_act": "silu", "max_position_embeddings": 40960, "max_window_layers": 28,
              "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "rope_scaling": None,
              "sliding_window": None, "use_sliding_window": False, "attention_bias": False,
              "tie_word_embeddings": True, "vocab_size": 151936},
        # n_head * head_dim = 64 > n_embd = 32, as 16 * 128 > 1024.
        shrink={"hidden_size": 32, "intermediate_size": 96, "num_hidden_layers": 3,
                "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
                "max_window_layers": 3},
        tokenizer=dict(kind="bpe", regex=QWEN2_REGEX, n_bpe=320, specials=QWEN_SPECIALS,
                       bos=None, eos="<|im_end|>", add_bos=False, pre="qwen2", vocab_pad=13),
        seed=4),
    "phi3": dict(
        real_model="microsoft/Phi-3-mini-4k-instruct", gguf_arch="phi3",
        real={"architectures": ["Phi3ForCausalLM"], "model_type": "phi3",
              "hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 32,
              "num_attention_heads": 32, "num_key_value_heads": 32, "hidden_act": "silu",
              "max_position_embeddings": 4096, "original_max_position_embeddings": 4096,
              "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "rope_scaling": None,
              "sliding_window": 2047, "tie_word_embeddings": False, "attention_bias": False,
              "vocab_size": 32064},
        shrink={"hidden_size": 32, "intermediate_size": 96, "num_hidden_layers": 3,
                "num_attention_heads": 4, "num_key_value_heads": 4},
        # 320 SentencePiece pieces, 11 added tokens (Phi-3's, in its order), padding rows.
        tokenizer=dict(kind="spm", vocab=320, unk=0, bos=1, eos=2, pad=-1, add_dummy_prefix=True,
                       control=[], user=[], added=PHI3_ADDED, vocab_pad=5,
                       eos_token="<|endoftext|>"),
        seed=5),
    "gemma3": dict(
        real_model="google/gemma-3-270m", gguf_arch="gemma3",
        real={"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text",
              "hidden_size": 640, "intermediate_size": 2048, "num_hidden_layers": 18,
              "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256,
              "hidden_activation": "gelu_pytorch_tanh", "max_position_embeddings": 32768,
              "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
              "rope_local_base_freq": 10000.0, "rope_scaling": None, "sliding_window": 512,
              "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * 3,
              "attn_logit_softcapping": None, "final_logit_softcapping": None,
              "attention_bias": False, "use_bidirectional_attention": False,
              "tie_word_embeddings": True, "vocab_size": 262144},
        # Six layers: five sliding, one global (llama.cpp's pattern 6). A window of 6 tokens
        # under sequences of 40. query_pre_attn_scalar = head_dim, as in the real model (llama.cpp
        # scales by 1/sqrt(head_dim) for every size but 27B).
        shrink={"hidden_size": 32, "intermediate_size": 80, "num_hidden_layers": 6,
                "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 16,
                "query_pre_attn_scalar": 16, "sliding_window": 6,
                "layer_types": ["sliding_attention"] * 5 + ["full_attention"]},
        tokenizer=dict(kind="spm", vocab=384, unk=3, bos=2, eos=1, pad=0, add_dummy_prefix=False,
                       control=[], user=["<start_of_turn>", "<end_of_turn>"]),
        seed=6),
}
