"""The chat template of a GGUF, for the embedded backend: its own, else its family's format."""

from __future__ import annotations

from collections.abc import Mapping

# For a GGUF without a template (base models often have none): the format its family was
# trained on, by ``general.architecture``, else ChatML, the most widely trained one.
_CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
_GEMMA = (  # no system role: the system text opens the first user turn
    "{{ bos_token }}{% set system = messages[0]['content'] + '\n\n' "
    "if messages[0]['role'] == 'system' else '' %}"
    "{% for m in messages if m['role'] != 'system' %}<start_of_turn>"
    "{{ 'model' if m['role'] == 'assistant' else 'user' }}\n"
    "{{ (system if loop.first else '') + m['content'] }}<end_of_turn>\n{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)
_FALLBACK_TEMPLATES = {"gemma": _GEMMA, "gemma2": _GEMMA, "gemma3": _GEMMA}


def chat_template(metadata: Mapping[str, str]) -> tuple[str, str]:
    """The Jinja chat template for a GGUF's metadata, and what was done instead if it has none
    (empty when the template is the GGUF's own)."""
    template = metadata.get("tokenizer.chat_template")
    if template:
        return template, ""
    arch = metadata.get("general.architecture") or "unknown architecture"
    if arch in _FALLBACK_TEMPLATES:
        return _FALLBACK_TEMPLATES[arch], f"using the {arch} chat format"
    return _CHATML, f"using the ChatML chat format ({arch})"
