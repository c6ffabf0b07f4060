"""Turn an assistant message into tool calls, a final answer, or nothing.

Public API:

- ``parse_tool_calls(message, tools=None, *, done_reason=None) -> ParsedReply`` never raises;
- ``coerce_arguments(arguments, parameters_schema) -> dict`` fixes argument types;
- ``call_schema(tools, *, allow_final_answer=False) -> dict`` is the JSON schema of one valid
  call, for a constrained retry with Ollama's ``format``.

Formats read (where each is documented is noted next to its finder):

- native ``tool_calls`` (Ollama and OpenAI shapes, arguments as object or JSON string);
- JSON in the text: bare, fenced, lists, ``arguments``/``parameters``/``args``, wrappers
  (``function``, ``tool``, ``tool_calls``, ``tool_name``, LangChain ``action``), double-encoded
  arguments, Python-literal dicts, and repairs that only change punctuation (``faithful``:
  nothing invented, no missing value filled, no cut value completed; else ``malformed``);
- Hermes/Qwen ``<tool_call>``; Qwen3-Coder and Seed-OSS ``<function=..><parameter=..>``; GLM-4.5
  ``<arg_key>/<arg_value>`` (also with a dropped ``</arg_value>`` or ``<arg_value>``, or a bare
  name); MiniMax-M2 and DeepSeek DSML ``<invoke name=..>``; MiniCPM ``<function name="..">``
  with ``<param>`` tags or a JSON body; Llama 3.x ``<|python_tag|>`` and functionary v3.1
  ``<function=name>{json}``; Llama 3.2/4 and Gemma pythonic lists; Mistral ``[TOOL_CALLS]``
  (v3 list, v11 ``[ARGS]`` and ``name{json}``); DeepSeek V3/V3.1; Kimi K2; gpt-oss harmony;
  FunctionGemma and Gemma 4 ``call:name{...}`` (also bare, after its thought channel);
  Granite/Phi-4-mini ``<|tool_call|>`` and ``functools[...]``; Command R7B actions; Nemotron
  ``<TOOLCALL>``; InternLM2 plugins; LFM2; LM Studio ``[TOOL_REQUEST]``; Qwen-Agent
  ``✿FUNCTION✿``/``✿ARGS✿``; ReAct ``Action:``/``Action Input:``.

Prose that names call markup (inline code, or a marker mid-sentence not followed by a call) is
text; a call-shaped dict in a fence of a programming language is example code. Thinking
(``<think>``, ``[THINK]``, Gemma 4's thought channel, harmony analysis, the ``thinking``
field, ...) is never executed, except an unclosed thought that ends in complete call markup:
that call is made. See ``ParsedReply`` for what the loop is told.
"""

from localhand.parsing.coerce import coerce_arguments
from localhand.parsing.parser import parse_tool_calls
from localhand.parsing.reply import ParsedReply, ReplyType
from localhand.parsing.schema import call_schema

__all__ = ["ParsedReply", "ReplyType", "call_schema", "coerce_arguments", "parse_tool_calls"]
