#pragma once
// Recorded Chat Completions streams shared by the openai provider's tests; each names its source.

#include <string>
#include <string_view>

namespace deskd::model::testing {

// The refusal that openai-python's test_parse_pydantic_model_refusal recorded from the live
// API (tests/lib/chat/test_completions_streaming.py: model gpt-4o-2024-08-06, refusal "I'm
// sorry, but I can't assist with that request.", finish_reason "stop"), one token a chunk,
// in the shape of ChatCompletionChunk (src/openai/types/chat/chat_completion_chunk.py:
// the first delta {"role":"assistant","content":null,"refusal":""}), and the usage chunk
// that stream_options.include_usage adds (choices empty).
inline std::string refusal_chunk(std::string_view delta, std::string_view finish_reason = "null") {
  return R"(data: {"id":"chatcmpl-9tXjSozLhAbCdEfGhIjKlMnOpQrSt","object":"chat.completion.chunk","created":1723024734,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_845eaabc1f","choices":[{"index":0,"delta":)" +
         std::string(delta) + R"(,"logprobs":null,"finish_reason":)" + std::string(finish_reason) + "}]}\n\n";
}
inline const std::string kOpenAiRefusalStream =
    refusal_chunk(R"({"role":"assistant","content":null,"refusal":""})") + refusal_chunk(R"({"refusal":"I'm"})") +
    refusal_chunk(R"({"refusal":" sorry"})") + refusal_chunk(R"({"refusal":","})") +
    refusal_chunk(R"({"refusal":" but"})") + refusal_chunk(R"({"refusal":" I"})") +
    refusal_chunk(R"({"refusal":" can't"})") + refusal_chunk(R"({"refusal":" assist"})") +
    refusal_chunk(R"({"refusal":" with"})") + refusal_chunk(R"({"refusal":" that"})") +
    refusal_chunk(R"({"refusal":" request"})") + refusal_chunk(R"({"refusal":"."})") +
    refusal_chunk("{}", R"("stop")") +
    R"(data: {"id":"chatcmpl-9tXjSozLhAbCdEfGhIjKlMnOpQrSt","object":"chat.completion.chunk","created":1723024734,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_845eaabc1f","choices":[],"usage":{"prompt_tokens":17,"completion_tokens":12,"total_tokens":29}})"
    "\n\n"
    "data: [DONE]\n\n";

// DeepSeek's thinking mode calling a tool, as its guide describes the stream
// (https://api-docs.deepseek.com/guides/thinking_mode: "reasoning_content: the content of
// the CoT, at the same level as content"; its API example reads
// chunk.choices[0].delta.reasoning_content before delta.content), in the ChatCompletionChunk
// shape, with DeepSeek's usage fields (prompt_cache_hit_tokens / prompt_cache_miss_tokens,
// https://api-docs.deepseek.com/guides/kv_cache; completion_tokens_details.reasoning_tokens).
inline std::string deepseek_chunk(std::string_view delta, std::string_view finish_reason = "null") {
  return R"(data: {"id":"5f0d7c3e-9a1b-4c2d-8e3f-0a1b2c3d4e5f","object":"chat.completion.chunk","created":1761300000,"model":"deepseek-reasoner","system_fingerprint":"fp_ffc7281d48_prod0820_fp8_kvcache","choices":[{"index":0,"delta":)" +
         std::string(delta) + R"(,"logprobs":null,"finish_reason":)" + std::string(finish_reason) + "}]}\n\n";
}
inline const std::string kDeepSeekReasoningToolCallStream =
    deepseek_chunk(R"({"role":"assistant","content":null,"reasoning_content":""})") +
    deepseek_chunk(R"({"reasoning_content":"The user wants the files."})") +
    deepseek_chunk(R"({"reasoning_content":" I should run ls."})") +
    deepseek_chunk(
        R"({"tool_calls":[{"index":0,"id":"call_00_ls","type":"function","function":{"name":"bash","arguments":""}}]})") +
    deepseek_chunk(R"({"tool_calls":[{"index":0,"function":{"arguments":"{\"command\": \"ls\"}"}}]})") +
    deepseek_chunk(R"({"content":null})", R"("tool_calls")") +
    R"(data: {"id":"5f0d7c3e-9a1b-4c2d-8e3f-0a1b2c3d4e5f","object":"chat.completion.chunk","created":1761300000,"model":"deepseek-reasoner","choices":[],"usage":{"prompt_tokens":300,"completion_tokens":40,"total_tokens":340,"prompt_cache_hit_tokens":256,"prompt_cache_miss_tokens":44,"completion_tokens_details":{"reasoning_tokens":25}}})"
    "\n\n"
    "data: [DONE]\n\n";

}  // namespace deskd::model::testing
