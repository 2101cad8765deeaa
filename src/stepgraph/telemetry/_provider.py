"""Which GenAI provider a model call went to, told from the endpoint's host.

The client speaks the OpenAI Chat Completions API to any endpoint, so the API says
nothing about who answered: the host does. A host of a provider with a well-known value
in the semantic conventions gets that value (``openai`` only for api.openai.com); a
server on this machine or the local network (llama.cpp, vLLM, Ollama: their URLs do not
tell them apart) is ``local``; any other host is named by its domain (openrouter.ai ->
``openrouter``). ``server.address`` and ``server.port`` on the span say exactly where.
"""

from __future__ import annotations

import ipaddress

from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import (
    GenAiProviderNameValues as Known,
)

SCRIPTED = "stepgraph.scripted"  # the offline scripted model: no endpoint at all
LOCAL = "local"
UNKNOWN = "_OTHER"  # no endpoint recorded (a journal from before it was, a custom client)

# Domains (the host or a host under it) -> the conventions' well-known values.
_HOSTS: tuple[tuple[str, Known], ...] = (
    ("api.openai.com", Known.OPENAI),
    ("openai.azure.com", Known.AZURE_AI_OPENAI),
    ("services.ai.azure.com", Known.AZURE_AI_INFERENCE),
    ("inference.ai.azure.com", Known.AZURE_AI_INFERENCE),
    ("api.anthropic.com", Known.ANTHROPIC),
    ("generativelanguage.googleapis.com", Known.GCP_GEMINI),
    ("api.cohere.com", Known.COHERE),
    ("api.cohere.ai", Known.COHERE),
    ("ml.cloud.ibm.com", Known.IBM_WATSONX_AI),
    ("api.perplexity.ai", Known.PERPLEXITY),
    ("api.x.ai", Known.X_AI),
    ("api.deepseek.com", Known.DEEPSEEK),
    ("api.groq.com", Known.GROQ),
    ("api.mistral.ai", Known.MISTRAL_AI),
)
_LOCAL_SUFFIXES = (".local", ".localhost", ".internal", ".lan", ".home.arpa")
_SECOND_LEVEL = frozenset({"co", "com", "net", "org", "ac", "gov"})  # api.example.co.uk


def provider_name(server_address: str | None, model: str) -> str:
    """The ``gen_ai.provider.name`` of a call to `server_address` (None: not recorded)."""
    if not server_address:
        return SCRIPTED if model == "scripted" else UNKNOWN
    host = server_address.lower().rstrip(".").strip("[]")
    for domain, known in _HOSTS:
        if host == domain or host.endswith("." + domain):
            return known.value
    if host.endswith("aiplatform.googleapis.com"):  # us-central1-aiplatform.googleapis.com
        return Known.GCP_VERTEX_AI.value
    if host.startswith("bedrock") and host.endswith(".amazonaws.com"):
        return Known.AWS_BEDROCK.value
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is not None:  # a bare address names no one, unless it is nearby
        private = address.is_loopback or address.is_private or address.is_link_local
        return LOCAL if private else UNKNOWN
    if "." not in host or host.endswith(_LOCAL_SUFFIXES):  # localhost, gpu-box, box.lan
        return LOCAL
    labels = host.split(".")
    if len(labels) >= 3 and labels[-2] in _SECOND_LEVEL and len(labels[-1]) == 2:
        return labels[-3]
    return labels[-2]
