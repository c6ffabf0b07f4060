"""The families localhand knows, as data: one ``Profile`` each, most specific first.

Sources. Sampling values are the makers' own: the model card's recommendation where it gives
one, else the ``generation_config.json`` the weights ship with (which llama.cpp's converter
writes into the GGUF as ``general.sampling.*``); where neither recommends anything, nothing
is sent and the server's default applies. Template facts (switches, where reasoning is
rendered, tool roles, id rules) are from the Jinja chat templates under ``tests/templates/``
(llama.cpp's ``models/templates/`` at ggml-org/llama.cpp 0c1e57098bba; see its SOURCES.json),
which ``tests/profiles/test_templates.py`` renders.

Think budgets: the reply ceiling (4096 tokens, thinking included) leaves a call no room when
the model thinks past about half of it, so a family that thinks is cut at 2048 tokens of
thinking and asked again with thinking off; families that think at length by design (R1)
get a little more.
"""

from __future__ import annotations

from dataclasses import replace

from localhand.profiles.formats import write_call
from localhand.profiles.model import GENERIC, Profile, Sampling

# Qwen3 model cards (e.g. huggingface.co/Qwen/Qwen3-8B, README "Best Practices"): "For thinking
# mode (enable_thinking=True), use Temperature=0.6, TopP=0.95, TopK=20, and MinP=0 (the default
# setting in generation_config.json) ... For non-thinking mode (enable_thinking=False), we
# suggest using Temperature=0.7, TopP=0.8, TopK=20, and MinP=0."
_QWEN3_THINK = Sampling(temperature=0.6, top_p=0.95, top_k=20, min_p=0.0)
_QWEN3_PLAIN = Sampling(temperature=0.7, top_p=0.8, top_k=20, min_p=0.0)
# Qwen3-Coder-30B-A3B-Instruct model card, "Best Practices": "We suggest using temperature=0.7,
# top_p=0.8, top_k=20, repetition_penalty=1.05." Qwen2.5-Coder-*-Instruct ship the same four
# values in their generation_config.json.
_QWEN_CODER = Sampling(temperature=0.7, top_p=0.8, top_k=20, repeat_penalty=1.05)
# Mistral Small 3 / 3.1 / 3.2 model cards (mistralai/Mistral-Small-3.2-24B-Instruct-2506,
# "Note 1"): "We recommend using a relatively low temperature, such as temperature=0.15."
# Devstral is fine-tuned from Mistral Small 3.1 and its card's examples use the same 0.15.
_MISTRAL = Sampling(temperature=0.15)

# What the families below share unless they say otherwise: a call the model wrote as text is
# kept in the history as a native call (``text_call_history``), as their templates render it.
_FAMILY = replace(GENERIC, text_call_history="native")
# A family whose template has a switch for thinking (``enable_thinking``), on by default, cut
# at 2048 tokens of thinking (see above); Ollama takes think true/false for it.
_HYBRID = replace(
    _FAMILY,
    thinking="hybrid",
    think=True,
    ollama_think="bool",
    template_switch="enable_thinking",
    think_budget=2048,
)
# Mistral's families write [TOOL_CALLS]NAME[ARGS]{...} and need 9-character call ids.
_MISTRAL_FAMILY = replace(_FAMILY, text_format="mistral", call_ids="mistral9")

_FAMILIES = (
    replace(
        _HYBRID,
        name="deepseek-r1",
        family="DeepSeek-R1 and its Qwen/Llama distills (deepseek-r1:8b, R1-Distill-Qwen-7B)",
        # Before qwen and llama: a distill's name carries its base model's name too.
        patterns=(r"deepseek-r1",),
        # Hybrid: it always reasons unless told not to. Ollama's deepseek-r1 takes think
        # true/false; llama.cpp's template for the distills closes the thought at once when
        # enable_thinking is false.
        # The R1 template renders no reasoning for earlier turns: it cuts everything up to
        # </think> out of each assistant turn.
        reasoning_return="never",
        # DeepSeek-R1 README, "Usage Recommendations": "Set the temperature within the range of
        # 0.5-0.7 (0.6 is recommended)"; its API guidance adds top-p 0.95.
        sampling=Sampling(temperature=0.6, top_p=0.95),
        text_format="deepseek",
        # The distills were not trained on tools; Ollama's deepseek-r1 has no tools capability.
        native_tools_ollama=False,
        native_tools_llama_server=True,
        think_budget=3072,
    ),
    replace(
        _FAMILY,
        name="qwen3-coder",
        family="Qwen3-Coder (qwen3-coder:30b, Qwen3-Coder-30B-A3B-Instruct)",
        patterns=(r"qwen3-coder",),
        sampling=_QWEN_CODER,
        text_format="qwen3_coder",
    ),
    replace(
        _FAMILY,
        name="qwen2.5-coder",
        family="Qwen2.5-Coder (qwen2.5-coder:7b, Qwen2.5-Coder-7B-Instruct)",
        patterns=(r"qwen2\.5-coder",),
        sampling=_QWEN_CODER,
        text_format="hermes",
    ),
    replace(
        _HYBRID,
        name="qwen3",
        family="Qwen3 (qwen3:8b, Qwen3-4B, Qwen3-30B-A3B): hybrid thinking",
        # Not qwen3.5 or later, whose templates keep reasoning differently.
        patterns=(r"qwen3(?![.\d])",),
        soft_switch=" /no_think",
        # The template renders <think> for assistant turns after the last user query: the
        # model's own tool-call chain, so its server cache of that output stays valid.
        reasoning_return="current_turn",
        sampling=_QWEN3_THINK,
        sampling_no_think=_QWEN3_PLAIN,
        text_format="hermes",
    ),
    replace(
        _FAMILY,
        name="gpt-oss",
        family="OpenAI gpt-oss (gpt-oss:20b, gpt-oss-120b): harmony format",
        patterns=(r"gpt-oss",),
        thinking="always",
        # Effort levels only: think=false is not a thing for gpt-oss ("low" is the least).
        ollama_think="level",
        template_switch="reasoning_effort",
        # The harmony template keeps the analysis message of a tool-call turn until a final
        # answer follows; without it the model loses its plan between calls.
        reasoning_return="tool_chain",
        # github.com/openai/gpt-oss README, "Recommended Sampling Parameters": "We recommend
        # sampling with temperature=1.0 and top_p=1.0."
        sampling=Sampling(temperature=1.0, top_p=1.0),
        text_format="harmony",
        think_budget=2048,
        # Text calls must become native (as for every family): the template raises on a tool
        # message after an assistant turn without tool_calls, and on <|channel|> markup in
        # content.
    ),
    replace(
        _MISTRAL_FAMILY,
        name="magistral",
        family="Mistral's reasoning models (magistral:24b, Ministral-3-*-Reasoning)",
        patterns=(r"magistral", r"ministral-3.*reasoning"),
        # Its system prompt asks for [THINK]...[/THINK]; the templates have no switch.
        thinking="always",
        # Magistral Small 1.1 model card, "Sampling parameters": top_p 0.95, temperature 0.7.
        sampling=Sampling(temperature=0.7, top_p=0.95),
        think_budget=2048,
    ),
    replace(
        _MISTRAL_FAMILY,
        name="devstral",
        family="Devstral (devstral:24b, Devstral-Small-2507)",
        patterns=(r"devstral",),
        sampling=_MISTRAL,
    ),
    replace(
        _MISTRAL_FAMILY,
        name="mistral",
        family="Mistral Small 3.x, Nemo, Ministral (mistral-small3.2, mistral-nemo)",
        patterns=(r"mistral", r"ministral", r"mixtral"),
        sampling=_MISTRAL,
    ),
    replace(
        _FAMILY,
        name="llama3",
        family="Meta Llama 3.1 / 3.2 / 3.3 (llama3.1:8b, llama3.2:3b)",
        patterns=(r"llama-?3(?:[.-]\d)?(?!\d)",),
        # generation_config.json of meta-llama/Llama-3.1-8B-Instruct and -3.2-3B-Instruct:
        # "temperature": 0.6, "top_p": 0.9.
        sampling=Sampling(temperature=0.6, top_p=0.9),
        text_format="json",
        # The template takes one call per assistant turn ("This model only supports single
        # tool-calls at once!") and renders results as the ipython role: calls stay native.
    ),
    replace(
        _HYBRID,
        name="gemma4",
        family="Google Gemma 4 (gemma4, gemma-4-31B-it)",
        patterns=(r"gemma-?4",),
        think=False,  # the template thinks only when enable_thinking is set
        # The template renders reasoning as a thought channel for a tool-call turn after the
        # last user message.
        reasoning_return="current_turn",
        # Gemma 4 model card, "Best practices": temperature=1.0, top_p=0.95, top_k=64.
        sampling=Sampling(temperature=1.0, top_p=0.95, top_k=64),
        text_format="gemma4",
    ),
    replace(
        _FAMILY,
        name="gemma3",
        family="Google Gemma 3 (gemma3:4b, gemma-3-270m): no tool support in its template",
        patterns=(r"gemma-?3",),
        # generation_config.json of google/gemma-3-4b-it: "top_k": 64, "top_p": 0.95 (and no
        # temperature: 1.0).
        sampling=Sampling(temperature=1.0, top_p=0.95, top_k=64),
        # Google's Gemma 3 function-calling guide: calls as Python in a ```tool_code fence.
        text_format="pythonic",
        # Ollama refuses tools for gemma3 ("does not support tools"); the template has no tool
        # role and raises unless user and model turns alternate.
        native_tools_ollama=False,
        native_tools_llama_server=False,
        text_call_history="as_text",
        tool_result_role="user",
    ),
    replace(
        _FAMILY,
        name="granite4",
        family="IBM Granite 4.x (granite4:tiny-h, granite-4.0-h-small)",
        patterns=(r"granite-?4",),
        # The granite-4.0 template asks for <tool_call>{json}</tool_call> and renders calls so.
        text_format="hermes",
    ),
    replace(
        _HYBRID,
        name="granite",
        family="IBM Granite 3.x (granite3.3:8b, granite-3.3-2b-instruct)",
        patterns=(r"granite",),
        # Granite 3.3's template switches reasoning with a `thinking` kwarg; off by default.
        think=False,
        template_switch="thinking",
        # The model cards recommend no sampling: the server's defaults apply.
        text_format="tool_call_token",
        # Its template renders no tool_calls: a call stored natively would vanish.
        text_call_history="as_text",
    ),
    replace(
        _FAMILY,
        name="phi-4",
        family="Microsoft Phi-4-mini (phi4-mini): llama.cpp's own template",
        patterns=(r"phi-?4",),
        # The Phi-4-mini card shows greedy decoding in its example and recommends nothing
        # else: the server's defaults apply.
        text_format="phi4",
    ),
    replace(
        _HYBRID,
        name="glm-4.5",
        family="Zhipu GLM-4.5 / 4.6 (glm-4.5-air, glm4.6): hybrid thinking",
        patterns=(r"glm-?4\.[5-9]",),
        soft_switch=" /nothink",
        # The template renders <think> for assistant turns after the last user message.
        reasoning_return="current_turn",
        # The GLM-4.5 README recommends no sampling: the server's defaults apply.
        text_format="glm",
    ),
)


def _with_example(family: Profile) -> Profile:
    """``family`` with the prompt's example call (``call_example``) written as the family
    writes calls (``profiles.formats``), so that the two cannot disagree."""
    example = write_call(family.text_format, "read_file", {"path": "calc.py"})
    return replace(family, call_example=example)


PROFILES: tuple[Profile, ...] = tuple(_with_example(family) for family in _FAMILIES)
"""Most specific first: the first profile with a pattern found in the name applies."""

JSON_CALLS = replace(
    GENERIC,
    name="json-calls",
    family="the embedded backend's own format: every call JSON under a grammar",
    text_call_history="native",
)
"""For the embedded backend, whatever the family: it renders the history itself, calls as the
JSON its grammar allows and results as user turns (``models._json_calls``), so calls stay
native in the history and no template's needs apply. A model under a billion parameters (the
tiny default) also gets a short prompt, five tools and a grammar of only the calls that can
work (``localhand.run.tiny``): the agent holds that policy; a profile names no prompt or tools."""
