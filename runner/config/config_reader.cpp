#include "runner/config/config_reader.h"

#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cmath>

namespace deskd::app::config_detail {
namespace {

std::string key_name(std::string_view key) { return "'" + std::string(key) + "'"; }

std::string format_number(double value) {
  char buffer[64];
  const auto written = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, written.ptr);
}

}  // namespace

TableReader::TableReader(const toml::table* table, std::string title, LoadContext& context, ConfigPosition fallback)
    : table_(table), title_(std::move(title)), context_(context), fallback_(std::move(fallback)) {}

ConfigPosition TableReader::position() const {
  if (table_ != nullptr && table_->source().begin) return context_.where(table_->source());
  return fallback_;
}

void TableReader::missing(std::string_view key) {
  context_.problems.add(position(), (title_.empty() ? std::string("the file") : title_) + " needs a " + key_name(key));
}

const toml::node* TableReader::find(std::string_view key) {
  known_.emplace(key);
  return table_ == nullptr ? nullptr : table_->get(key);
}

std::optional<std::string> TableReader::string(std::string_view key) {
  const toml::node* node = find(key);
  if (node == nullptr) return std::nullopt;
  if (const auto* value = node->as_string()) return value->get();
  problem(*node, key_name(key) + " must be a string");
  return std::nullopt;
}

std::optional<std::string> TableReader::choice(std::string_view key, std::initializer_list<std::string_view> choices) {
  return choice(key, std::span<const std::string_view>(choices.begin(), choices.size()));
}

std::optional<std::string> TableReader::choice(std::string_view key, std::span<const std::string_view> choices) {
  auto value = string(key);
  if (!value) return std::nullopt;
  std::string listed;
  for (const auto choice : choices) {
    if (*value == choice) return value;
    listed += (listed.empty() ? "" : ", ") + std::string(choice);
  }
  problem(*find(key), key_name(key) + " must be one of " + listed + ", not " + in_quotes(*value));
  return std::nullopt;
}

std::optional<bool> TableReader::boolean(std::string_view key) {
  const toml::node* node = find(key);
  if (node == nullptr) return std::nullopt;
  if (const auto* value = node->as_boolean()) return value->get();
  problem(*node, key_name(key) + " must be true or false");
  return std::nullopt;
}

std::optional<double> TableReader::number(std::string_view key, NumberRange range) {
  const toml::node* node = find(key);
  if (node == nullptr) return std::nullopt;
  double value = 0;
  if (const auto* integer = node->as_integer()) {
    value = static_cast<double>(integer->get());
  } else if (const auto* floating = node->as_floating_point()) {
    value = floating->get();
  }
  if ((!node->is_integer() && !node->is_floating_point()) || std::isnan(value)) {
    problem(*node, key_name(key) + " must be a number");
    return std::nullopt;
  }
  if (range.open_minimum ? !(value > range.minimum) : !(value >= range.minimum)) {
    problem(*node, key_name(key) + " must be " + (range.open_minimum ? "more than " : "at least ") +
                       format_number(range.minimum));
    return std::nullopt;
  }
  if (value > range.maximum) {
    problem(*node, key_name(key) + " must be at most " + format_number(range.maximum));
    return std::nullopt;
  }
  return value;
}

std::optional<std::int64_t> TableReader::whole(std::string_view key, std::int64_t minimum, std::int64_t maximum) {
  const toml::node* node = find(key);
  if (node == nullptr) return std::nullopt;
  const auto* integer = node->as_integer();
  if (integer == nullptr) {
    problem(*node, key_name(key) + " must be a whole number");
    return std::nullopt;
  }
  const std::int64_t value = integer->get();
  if (value < minimum) {
    problem(*node, key_name(key) + " must be at least " + std::to_string(minimum));
    return std::nullopt;
  }
  if (value > maximum) {
    problem(*node, key_name(key) + " must be at most " + std::to_string(maximum));
    return std::nullopt;
  }
  return value;
}

std::optional<std::vector<std::pair<std::string, const toml::node*>>> TableReader::strings(std::string_view key) {
  const toml::node* node = find(key);
  if (node == nullptr) return std::nullopt;
  const auto* array = node->as_array();
  if (array == nullptr) {
    problem(*node, key_name(key) + " must be an array of strings");
    return std::nullopt;
  }
  std::vector<std::pair<std::string, const toml::node*>> values;
  bool all_strings = true;
  for (const auto& element : *array) {
    if (const auto* value = element.as_string()) {
      values.emplace_back(value->get(), &element);
    } else {
      problem(element, key_name(key) + " must hold only strings");
      all_strings = false;
    }
  }
  if (!all_strings) return std::nullopt;
  return values;
}

std::optional<PlacedPath> TableReader::resolve(const toml::node& node, std::string_view key, std::string label) {
  const auto* value = node.as_string();
  if (value == nullptr) {
    problem(node, key_name(key) + " must be a string (a path)");
    return std::nullopt;
  }
  if (value->get().empty()) {
    problem(node, key_name(key) + " must not be empty");
    return std::nullopt;
  }
  auto resolved = resolve_config_path(value->get(), context_.folder);
  if (!resolved.ok()) {
    problem(node, key_name(key) + ": " + resolved.error().what);
    return std::nullopt;
  }
  return PlacedPath{std::move(resolved).value(), where(node), std::move(label)};
}

std::optional<PlacedPath> TableReader::path(std::string_view key, std::string label) {
  const toml::node* node = find(key);
  if (node == nullptr) return std::nullopt;
  return resolve(*node, key, std::move(label));
}

std::vector<PlacedPath> TableReader::paths(std::string_view key, std::string label) {
  std::vector<PlacedPath> paths;
  const toml::node* node = find(key);
  if (node == nullptr) return paths;
  const auto* array = node->as_array();
  if (array == nullptr) {
    problem(*node, key_name(key) + " must be an array of strings (paths)");
    return paths;
  }
  for (const auto& element : *array) {
    if (auto path = resolve(element, key, label)) paths.push_back(std::move(*path));
  }
  return paths;
}

const toml::table* TableReader::table(std::string_view key) {
  const toml::node* node = find(key);
  if (node == nullptr) return nullptr;
  if (const auto* table = node->as_table()) return table;
  problem(*node, key_name(key) + " must be a table");
  return nullptr;
}

void TableReader::report_unknown_keys() const {
  if (table_ == nullptr) return;
  const std::string place = title_.empty() ? "at the top level" : "in " + title_;
  for (const auto& [key, node] : *table_) {
    if (known_.contains(key.str())) continue;
    context_.problems.add(context_.where(key.source()), "unknown key " + in_quotes(key.str()) + ' ' + place);
  }
}

bool expect_existing(LoadContext& context, const PlacedPath& path, PathKind kind, std::string_view what) {
  struct stat status {};
  if (::stat(path.path.c_str(), &status) != 0) {
    if (errno == EACCES || errno == EPERM) return true;
    context.problems.add(path.position, std::string(what) + ' ' + path.path.native() +
                                            (errno == ENOENT ? " does not exist" : " cannot be examined"));
    return false;
  }
  const bool folder = S_ISDIR(status.st_mode);
  if (kind == PathKind::file_or_folder) return true;
  if (kind == PathKind::folder && !folder) {
    context.problems.add(path.position, std::string(what) + ' ' + path.path.native() + " is not a folder");
    return false;
  }
  if (kind == PathKind::file && folder) {
    context.problems.add(path.position, std::string(what) + ' ' + path.path.native() + " is a folder, not a file");
    return false;
  }
  return true;
}

std::optional<std::string> required_string(TableReader& reader, std::string_view key) {
  const toml::node* node = reader.find(key);
  if (node == nullptr) {
    reader.missing(key);
    return std::nullopt;
  }
  auto value = reader.string(key);
  if (value && value->empty()) {
    reader.problem(*node, "'" + std::string(key) + "' must not be empty");
    return std::nullopt;
  }
  return value;
}

}  // namespace deskd::app::config_detail
