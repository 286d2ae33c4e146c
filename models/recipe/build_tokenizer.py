"""Train the byte-level BPE tokenizer and write tokenizer.json and
tokenizer_config.json (needs the `tokenizers` package).

Pre-tokenization is the Qwen2-style split regex followed by ByteLevel with
no prefix space; the decoder is ByteLevel.  The chat special tokens are
added after the learned vocabulary, so they take the last ids.
"""
import json
import os

import chatfmt

SPLIT_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
               r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
VOCAB_SIZE = 8192
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]         # special: skipped when decoding for display
MARKERS = ["<think>", "</think>", "<tool_call>", "</tool_call>",
           "<tool_response>", "</tool_response>"]               # ordinary added tokens, kept in text


def train(texts, vocab_size=VOCAB_SIZE):
    from tokenizers import Tokenizer, Regex, AddedToken, decoders, models, pre_tokenizers, processors, trainers
    tok = Tokenizer(models.BPE(byte_fallback=False, fuse_unk=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(SPLIT_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size - len(SPECIAL) - len(MARKERS),
                                  min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())

    def cleaned():
        # markers become whole tokens later: keep them out of the merges
        for t in texts:
            for s in SPECIAL + MARKERS:
                t = t.replace(s, "\n")
            yield t
    tok.train_from_iterator(cleaned(), trainer, length=len(texts))
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in SPECIAL])
    tok.add_tokens([AddedToken(s, special=False, normalized=False) for s in MARKERS])
    return tok


def tokenizer_config(tok, model_max_length=4096):
    decoder = {}
    for s in SPECIAL + MARKERS:
        decoder[str(tok.token_to_id(s))] = {
            "content": s, "lstrip": False, "normalized": False, "rstrip": False,
            "single_word": False, "special": s in SPECIAL}
    return {
        "add_bos_token": False,
        "add_prefix_space": False,
        "added_tokens_decoder": decoder,
        "additional_special_tokens": ["<|im_start|>", "<|im_end|>"],
        "bos_token": None,
        "chat_template": chatfmt.template_source(),
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>",
        "errors": "replace",
        "model_max_length": model_max_length,
        "pad_token": "<|endoftext|>",
        "split_special_tokens": False,
        "tokenizer_class": "PreTrainedTokenizerFast",
        "unk_token": None,
    }


def save(tok, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    tok.save(os.path.join(out_dir, "tokenizer.json"))
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_config(tok), f, indent=2, ensure_ascii=False)
        f.write("\n")
