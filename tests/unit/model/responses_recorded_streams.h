#pragma once
// Streams of OpenAI's Responses API (POST /responses, stream: true) for the Responses
// provider's tests. Sources, openai-python at commit e43b422412a9e96c9cc5192c61fffbe2d7e04836:
// - api_reference/openapi.transformed.yml, POST /responses, example "Streaming" (the
//   event stream of a text reply, given whole there but for one elided delta), and the
//   x-oaiMeta examples of each event: ResponseErrorEvent, ResponseFailedEvent,
//   ResponseIncompleteEvent, ResponseFunctionCallArgumentsDeltaEvent/DoneEvent,
//   ResponseReasoningSummaryTextDeltaEvent, ResponseRefusalDeltaEvent;
// - src/openai/types/responses/: response_reasoning_item.py (id, summary, encrypted_content,
//   status), response_function_tool_call.py (call_id, name, arguments), response_usage.py
//   (input_tokens_details.cached_tokens, output_tokens_details.reasoning_tokens),
//   response_output_refusal.py ({"type": "refusal", "refusal"}), response.py
//   (IncompleteDetails.reason: "max_output_tokens" | "content_filter").
// The streams that the spec gives only as single events are those events in the order the
// streaming guide lists them (https://platform.openai.com/docs/guides/streaming-responses):
// response.created, output items added, their deltas, items done, then response.completed
// (or response.incomplete / response.failed).

#include <string>
#include <string_view>

namespace deskd::model::testing {

// The spec's "Streaming" example, verbatim but for its "..." (one delta completing the text).
inline constexpr std::string_view kResponsesTextStream = R"(event: response.created
data: {"type":"response.created","response":{"id":"resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654","object":"response","created_at":1741290958,"status":"in_progress","error":null,"incomplete_details":null,"instructions":"You are a helpful assistant.","max_output_tokens":null,"model":"gpt-5.4","output":[],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"store":true,"temperature":1.0,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled","usage":null,"user":null,"metadata":{}}}

event: response.in_progress
data: {"type":"response.in_progress","response":{"id":"resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654","object":"response","created_at":1741290958,"status":"in_progress","error":null,"incomplete_details":null,"instructions":"You are a helpful assistant.","max_output_tokens":null,"model":"gpt-5.4","output":[],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"store":true,"temperature":1.0,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled","usage":null,"user":null,"metadata":{}}}

event: response.output_item.added
data: {"type":"response.output_item.added","output_index":0,"item":{"id":"msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654","type":"message","status":"in_progress","role":"assistant","content":[]}}

event: response.content_part.added
data: {"type":"response.content_part.added","item_id":"msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}

event: response.output_text.delta
data: {"type":"response.output_text.delta","item_id":"msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654","output_index":0,"content_index":0,"delta":"Hi"}

event: response.output_text.delta
data: {"type":"response.output_text.delta","item_id":"msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654","output_index":0,"content_index":0,"delta":" there! How can I assist you today?"}

event: response.output_text.done
data: {"type":"response.output_text.done","item_id":"msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654","output_index":0,"content_index":0,"text":"Hi there! How can I assist you today?"}

event: response.content_part.done
data: {"type":"response.content_part.done","item_id":"msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654","output_index":0,"content_index":0,"part":{"type":"output_text","text":"Hi there! How can I assist you today?","annotations":[]}}

event: response.output_item.done
data: {"type":"response.output_item.done","output_index":0,"item":{"id":"msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi there! How can I assist you today?","annotations":[]}]}}

event: response.completed
data: {"type":"response.completed","response":{"id":"resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654","object":"response","created_at":1741290958,"status":"completed","error":null,"incomplete_details":null,"instructions":"You are a helpful assistant.","max_output_tokens":null,"model":"gpt-5.4","output":[{"id":"msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi there! How can I assist you today?","annotations":[]}]}],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"store":true,"temperature":1.0,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled","usage":{"input_tokens":37,"output_tokens":11,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":48},"user":null,"metadata":{}}}

)";

// A reasoning model's tool call with store = false and include: ["reasoning.encrypted_content"]:
// a reasoning item (its summary delta is the spec's ResponseReasoningSummaryTextDeltaEvent
// example; its encrypted_content only whole in output_item.done, as ResponseReasoningItem
// says), then a function call whose arguments stream in two deltas.
inline constexpr std::string_view kResponsesToolCallStream = R"(event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_tool1","object":"response","created_at":1741290958,"status":"in_progress","error":null,"incomplete_details":null,"model":"o3-pro-2025-06-10","output":[],"store":false,"usage":null}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"rs_6806bfca0b2481918a5748308061a2600d3ce51bdffd5476","type":"reasoning","summary":[]}}

event: response.reasoning_summary_part.added
data: {"type":"response.reasoning_summary_part.added","sequence_number":2,"item_id":"rs_6806bfca0b2481918a5748308061a2600d3ce51bdffd5476","output_index":0,"summary_index":0,"part":{"type":"summary_text","text":""}}

event: response.reasoning_summary_text.delta
data: {"type":"response.reasoning_summary_text.delta","sequence_number":3,"item_id":"rs_6806bfca0b2481918a5748308061a2600d3ce51bdffd5476","output_index":0,"summary_index":0,"delta":"**Listing the folder** The user wants the files; I will run ls."}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":4,"output_index":0,"item":{"id":"rs_6806bfca0b2481918a5748308061a2600d3ce51bdffd5476","type":"reasoning","encrypted_content":"gAAAAABoSr2vENCRYPTEDREASONINGx9Q==","summary":[{"type":"summary_text","text":"**Listing the folder** The user wants the files; I will run ls."}]}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":5,"output_index":1,"item":{"id":"fc_67ca09c6bedc8190a7abfec07b1a1332096610f474011cc0","type":"function_call","status":"in_progress","name":"bash","call_id":"call_unLAR8MvFNptuiZK6K6HCy5k","arguments":""}}

event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","sequence_number":6,"item_id":"fc_67ca09c6bedc8190a7abfec07b1a1332096610f474011cc0","output_index":1,"delta":"{ \"command\":"}

event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","sequence_number":7,"item_id":"fc_67ca09c6bedc8190a7abfec07b1a1332096610f474011cc0","output_index":1,"delta":" \"ls\" }"}

event: response.function_call_arguments.done
data: {"type":"response.function_call_arguments.done","sequence_number":8,"item_id":"fc_67ca09c6bedc8190a7abfec07b1a1332096610f474011cc0","name":"bash","output_index":1,"arguments":"{ \"command\": \"ls\" }"}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":9,"output_index":1,"item":{"id":"fc_67ca09c6bedc8190a7abfec07b1a1332096610f474011cc0","type":"function_call","status":"completed","name":"bash","call_id":"call_unLAR8MvFNptuiZK6K6HCy5k","arguments":"{ \"command\": \"ls\" }"}}

event: response.completed
data: {"type":"response.completed","sequence_number":10,"response":{"id":"resp_tool1","object":"response","created_at":1741290958,"status":"completed","error":null,"incomplete_details":null,"model":"o3-pro-2025-06-10","output":[],"store":false,"usage":{"input_tokens":1200,"input_tokens_details":{"cached_tokens":1024,"cache_write_tokens":0},"output_tokens":300,"output_tokens_details":{"reasoning_tokens":256},"total_tokens":1500}}}

)";

// A refusal: a message item whose content part is {"type": "refusal"}, streamed as
// response.refusal.delta (the spec's example event's shape), with the usage it is billed.
inline constexpr std::string_view kResponsesRefusalStream = R"(event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_ref1","object":"response","status":"in_progress","model":"gpt-5.4","output":[],"usage":null}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"msg_123","type":"message","status":"in_progress","role":"assistant","content":[]}}

event: response.refusal.delta
data: {"type":"response.refusal.delta","sequence_number":2,"item_id":"msg_123","output_index":0,"content_index":0,"delta":"I'm sorry, but I can't assist with that request."}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":3,"output_index":0,"item":{"id":"msg_123","type":"message","status":"completed","role":"assistant","content":[{"type":"refusal","refusal":"I'm sorry, but I can't assist with that request."}]}}

event: response.completed
data: {"type":"response.completed","sequence_number":4,"response":{"id":"resp_ref1","object":"response","status":"completed","error":null,"incomplete_details":null,"model":"gpt-5.4","output":[],"usage":{"input_tokens":17,"input_tokens_details":{"cached_tokens":0},"output_tokens":12,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":29}}}

)";

// A reply cut inside a function call: status incomplete, incomplete_details.reason
// "max_output_tokens" (response.py's IncompleteDetails), the arguments half written.
inline constexpr std::string_view kResponsesCutToolCallStream = R"(event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_cut1","object":"response","status":"in_progress","model":"gpt-5.4","output":[],"usage":null}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"fc_cut","type":"function_call","status":"in_progress","name":"write_file","call_id":"call_cut","arguments":""}}

event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","sequence_number":2,"item_id":"fc_cut","output_index":0,"delta":"{ \"path\": \"plan.md\", \"content\": \"# The pl"}

event: response.incomplete
data: {"type":"response.incomplete","sequence_number":3,"response":{"id":"resp_cut1","object":"response","status":"incomplete","error":null,"incomplete_details":{"reason":"max_output_tokens"},"model":"gpt-5.4","output":[],"usage":{"input_tokens":900,"input_tokens_details":{"cached_tokens":0},"output_tokens":64,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":964}}}

)";

// A text reply cut at max_output_tokens: a cut reply, not a failure.
inline constexpr std::string_view kResponsesCutTextStream = R"(event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"msg_cut","type":"message","status":"in_progress","role":"assistant","content":[]}}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":2,"item_id":"msg_cut","output_index":0,"content_index":0,"delta":"The plan has three par"}

event: response.incomplete
data: {"type":"response.incomplete","sequence_number":3,"response":{"id":"resp_cut2","object":"response","status":"incomplete","error":null,"incomplete_details":{"reason":"max_output_tokens"},"model":"gpt-5.4","output":[],"usage":{"input_tokens":50,"output_tokens":16,"total_tokens":66}}}

)";

// The spec's ResponseFailedEvent example.
inline constexpr std::string_view kResponsesFailedStream = R"(event: response.failed
data: {"type":"response.failed","response":{"id":"resp_123","object":"response","created_at":1740855869,"status":"failed","completed_at":null,"error":{"code":"server_error","message":"The model failed to generate a response."},"incomplete_details":null,"instructions":null,"max_output_tokens":null,"model":"gpt-4o-mini-2024-07-18","output":[],"previous_response_id":null,"reasoning_effort":null,"store":false,"temperature":1,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1,"truncation":"disabled","usage":null,"user":null,"metadata":{}}}

)";

// The spec's ResponseErrorEvent example.
inline constexpr std::string_view kResponsesErrorStream = R"(event: error
data: {"type":"error","code":"ERR_SOMETHING","message":"Something went wrong","param":null,"sequence_number":1}

)";

/// A whole stream ending a reply with `text`, in the shape of kResponsesTextStream.
inline std::string responses_text_stream(std::string_view text, std::string_view model = "gpt-5.4") {
  const std::string quoted = "\"" + std::string(text) + "\"";  // tests pass plain text
  return "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":"
         "{\"id\":\"msg_t\",\"type\":\"message\",\"status\":\"in_progress\",\"role\":\"assistant\",\"content\":[]}}\n\n"
         "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"msg_t\","
         "\"output_index\":0,\"content_index\":0,\"delta\":" +
         quoted +
         "}\n\n"
         "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_t\",\"status\":"
         "\"completed\",\"model\":\"" +
         std::string(model) +
         "\",\"output\":[],\"usage\":{\"input_tokens\":40,\"input_tokens_details\":{\"cached_tokens\":0},"
         "\"output_tokens\":8,\"output_tokens_details\":{\"reasoning_tokens\":0},\"total_tokens\":48}}}\n\n";
}

}  // namespace deskd::model::testing
