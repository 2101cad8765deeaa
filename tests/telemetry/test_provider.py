"""gen_ai.provider.name told honestly from the endpoint's host."""

import pytest

from stepgraph.telemetry._provider import provider_name


@pytest.mark.parametrize(
    ("host", "provider"),
    [
        ("api.openai.com", "openai"),
        ("myres.openai.azure.com", "azure.ai.openai"),
        ("myres.services.ai.azure.com", "azure.ai.inference"),
        ("api.anthropic.com", "anthropic"),
        ("generativelanguage.googleapis.com", "gcp.gemini"),
        ("us-central1-aiplatform.googleapis.com", "gcp.vertex_ai"),
        ("bedrock-runtime.us-east-1.amazonaws.com", "aws.bedrock"),
        ("api.deepseek.com", "deepseek"),
        ("api.groq.com", "groq"),
        ("api.mistral.ai", "mistral_ai"),
        ("api.x.ai", "x_ai"),
        ("api.perplexity.ai", "perplexity"),
        ("api.cohere.com", "cohere"),
        ("us-south.ml.cloud.ibm.com", "ibm.watsonx.ai"),
        # llama.cpp, vLLM, Ollama on this machine or nearby: their URLs look alike
        ("localhost", "local"),
        ("127.0.0.1", "local"),
        ("::1", "local"),
        ("192.168.1.20", "local"),
        ("gpu-box", "local"),
        ("gpu-box.lan", "local"),
        # another host is named by its domain, a bare public address by no one
        ("openrouter.ai", "openrouter"),
        ("api.together.xyz", "together"),
        ("llm.example.co.uk", "example"),
        ("8.8.8.8", "_OTHER"),
        ("API.OpenAI.com", "openai"),
        ("openai.com.evil.example", "evil"),  # a lookalike is not OpenAI
    ],
)
def test_the_host_names_the_provider(host, provider):
    assert provider_name(host, "any-model") == provider


def test_without_an_endpoint_only_the_scripted_model_is_named():
    assert provider_name(None, "scripted") == "stepgraph.scripted"
    assert provider_name(None, "gpt-4o-mini") == "_OTHER"  # a journal that did not record it
