#pragma once
// Which price applies to a model name. The APIs answer under a dated name: a request for
// "claude-haiku-4-5" is answered by "claude-haiku-4-5-20251001", one for "gpt-4o" by
// "gpt-4o-2024-08-06"; a price written for the name a person configures must apply to it.

#include <optional>
#include <string>
#include <string_view>

#include "runner/desk/usage_tracker.h"

namespace deskd::desk {

/// `model` without a trailing release date: "-YYYYMMDD" (Anthropic, "claude-haiku-4-5-20251001"),
/// "-YYYY-MM-DD" (OpenAI, "gpt-4o-2024-08-06") or "@YYYYMMDD" (Anthropic on Vertex AI);
/// `model` itself when it ends in none.
std::string undated_model_name(std::string_view model);

/// A price found for a model, and the name it was written under.
struct FoundPrice {
  ModelPrice price;
  std::string priced_as;
};

/// The price for `model` (the name the API answered with): the exact name always wins;
/// then its undated name, and that name's documented alias ("-latest", as
/// "claude-3-7-sonnet-latest" for "claude-3-7-sonnet-20250219"); then `configured` (the name the desk's config asks for, may be ""),
/// exactly and undated, when it is the same model (the same undated name, or
/// `model` is `configured` with a server's tag, as Ollama's "llama3:latest").
/// nullopt when none of them has a price.
std::optional<FoundPrice> find_price(const PriceTable& prices, std::string_view model, std::string_view configured = {});

}  // namespace deskd::desk
