#include "runner/tools/output_collector.h"

#include <cstring>

namespace deskd::tools {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The length a UTF-8 sequence starting with `lead` must have, or 0 for a byte that cannot
// start one.
std::size_t expected_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

// Whether `byte` may follow the sequence so far (`sequence[0..length)`), which rules out
// overlong forms, surrogates and code points past U+10FFFF as early as the second byte.
bool continues(const unsigned char* sequence, std::size_t length, unsigned char byte) {
  if ((byte & 0xC0) != 0x80) return false;
  if (length != 1) return true;
  switch (sequence[0]) {
    case 0xE0: return byte >= 0xA0;
    case 0xED: return byte <= 0x9F;
    case 0xF0: return byte >= 0x90;
    case 0xF4: return byte <= 0x8F;
    default: return true;
  }
}

std::size_t sequence_length_at(std::string_view text, std::size_t index) {
  const std::size_t length = expected_length(static_cast<unsigned char>(text[index]));
  return length == 0 ? 1 : length;
}

// How many bytes at the start of `bytes` are ASCII (each one character, stored as it is),
// eight at a time: a flood is nearly always ASCII, and needs no per-character work.
std::size_t ascii_prefix(std::string_view bytes) {
  constexpr std::uint64_t kHighBits = 0x8080808080808080ULL;
  std::size_t index = 0;
  for (; index + 8 <= bytes.size(); index += 8) {
    std::uint64_t word;
    std::memcpy(&word, bytes.data() + index, sizeof word);
    if ((word & kHighBits) != 0) break;
  }
  while (index < bytes.size() && static_cast<unsigned char>(bytes[index]) < 0x80) ++index;
  return index;
}

}  // namespace

OutputCollector::OutputCollector(std::size_t maximum_characters) : maximum_characters_(maximum_characters) {}

void OutputCollector::reset() {
  head_.clear();
  tail_.clear();
  head_characters_ = tail_characters_ = 0;
  total_characters_ = 0;
  pending_length_ = 0;
}

void OutputCollector::add_character(std::string_view encoded) {
  ++total_characters_;
  if (head_characters_ < maximum_characters_) {
    head_.append(encoded);
    ++head_characters_;
    return;
  }
  tail_.append(encoded);
  ++tail_characters_;
  // Trimming only when the tail holds twice what is needed keeps it amortised O(1).
  if (tail_characters_ >= 2 * maximum_characters_ + 64) trim_tail();
}

void OutputCollector::trim_tail() {
  std::size_t drop_characters = tail_characters_ - maximum_characters_;
  std::size_t offset = 0;
  while (drop_characters > 0 && offset < tail_.size()) {
    offset += sequence_length_at(tail_, offset);
    --drop_characters;
  }
  tail_.erase(0, offset);
  tail_characters_ = maximum_characters_;
}

// A run of ASCII characters at once: as many as fit into the head, and of the rest only the
// latest `maximum_characters_` ever need to be copied; the others are counted.
void OutputCollector::add_ascii(std::string_view run) {
  total_characters_ += run.size();
  if (head_characters_ < maximum_characters_) {
    const std::size_t into_head = std::min(run.size(), maximum_characters_ - head_characters_);
    head_.append(run.substr(0, into_head));
    head_characters_ += into_head;
    run.remove_prefix(into_head);
    if (run.empty()) return;
  }
  if (run.size() >= maximum_characters_) {
    tail_.assign(run.substr(run.size() - maximum_characters_));
    tail_characters_ = maximum_characters_;
    return;
  }
  tail_.append(run);
  tail_characters_ += run.size();
  if (tail_characters_ >= 2 * maximum_characters_ + 64) trim_tail();
}

void OutputCollector::append(std::string_view bytes) {
  std::size_t index = 0;
  while (index < bytes.size()) {
    if (pending_length_ == 0) {
      const std::size_t ascii = ascii_prefix(bytes.substr(index));
      if (ascii > 0) {
        add_ascii(bytes.substr(index, ascii));
        index += ascii;
        continue;
      }
    }
    const char raw = bytes[index++];
    const auto byte = static_cast<unsigned char>(raw);
    if (pending_length_ > 0) {
      if (continues(pending_, pending_length_, byte)) {
        pending_[pending_length_++] = byte;
        if (pending_length_ == expected_length(pending_[0])) {
          add_character({reinterpret_cast<const char*>(pending_), pending_length_});
          pending_length_ = 0;
        }
        continue;
      }
      // A broken sequence is one replacement character; the byte is looked at afresh.
      add_character(kReplacement);
      pending_length_ = 0;
      --index;
      continue;
    }
    const std::size_t length = expected_length(byte);
    if (length == 0) {
      add_character(kReplacement);
    } else {
      pending_[0] = byte;
      pending_length_ = 1;
    }
  }
}

void OutputCollector::finish() {
  if (pending_length_ > 0) add_character(kReplacement);
  pending_length_ = 0;
}

std::string OutputCollector::text() const {
  if (!truncated()) return head_ + tail_;
  // The note's length depends on the count it states, which depends on how much is kept:
  // settle it with the largest count it could state.
  const std::string probe = "\n[... " + std::to_string(total_characters_) + " characters left out ...]\n";
  if (probe.size() >= maximum_characters_) {
    std::size_t offset = 0;
    for (std::size_t kept = 0; kept < maximum_characters_ && offset < head_.size(); ++kept) {
      offset += sequence_length_at(head_, offset);
    }
    return head_.substr(0, offset);
  }
  const std::size_t room = maximum_characters_ - probe.size();
  const std::size_t start_characters = room / 2;
  const std::size_t end_characters = room - start_characters;
  std::size_t head_offset = 0;
  for (std::size_t kept = 0; kept < start_characters; ++kept) head_offset += sequence_length_at(head_, head_offset);
  // The end comes from the tail, and from the head's end when the tail is short.
  const std::string all_after_start = head_.substr(head_offset) + tail_;
  std::size_t characters_after_start = (head_characters_ - start_characters) + tail_characters_;
  std::size_t end_offset = 0;
  while (characters_after_start > end_characters) {
    end_offset += sequence_length_at(all_after_start, end_offset);
    --characters_after_start;
  }
  const std::uint64_t left_out = total_characters_ - start_characters - end_characters;
  return head_.substr(0, head_offset) + "\n[... " + std::to_string(left_out) + " characters left out ...]\n" +
         all_after_start.substr(end_offset);
}

}  // namespace deskd::tools
