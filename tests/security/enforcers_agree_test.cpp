// One confinement, two enforcers (issue 11): the file tools and the desk's bash are asked
// the same question about the same path — read it (read_file / cat), write it (write_file /
// printf >), list it (list_directory / ls) — and must give the same answer, allowed or
// refused. The paths are the desk's own files, its hidden ones, the user's files outside
// the writable places, places outside the desk (another folder, a root-only file, a private
// file of deskd's own user), system files and /proc/1/environ; each asked directly, through
// a link in scratch/ and through `..`. The file tools run as `deskd mcp` and bash as `deskd
// sandbox`, with the same --desk and --hide flags, as the root and the unprivileged daemon.
// Today the file tools run with deskd's identity and view: a root deskd's read_file reads
// /etc/shadow, which the desk's bash cannot; and what the sandbox does not show (a folder
// beside the desk, under the sandbox's fresh /tmp) the file tools still read.

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "security/mcp_session.h"
#include "security/sandbox_runner.h"

namespace deskd::security_testing {
namespace {

namespace fs = std::filesystem;

// What the issue says the answer must be, beside agreement; `either` where it depends on
// the host view still being changed (issue 11's minimal view) and only agreement is asked.
enum class Expect { allowed, refused, either };

struct Target {
  std::string label;
  std::string path;  // as asked: relative to the desk, or absolute
  Expect read;
  Expect write;
};

enum class Question { read, write, list };

struct Row {
  Question question;
  std::string label;
  std::string path;
  Expect expected;
};

struct Answer {
  bool allowed = false;
  std::string detail;
};

const char* verb(Question question) {
  return question == Question::read ? "read" : question == Question::write ? "write" : "list";
}

std::string one_line(std::string text) {
  for (char& each : text)
    if (each == '\n') each = ' ';
  return text.size() > 200 ? text.substr(0, 200) + "..." : text;
}

class EnforcersAgreeTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    const uid_t owner = daemon_host_uid(daemon());
    outside_ = std::make_unique<HostFolder>("/var/tmp/" + unique_name("deskd-agree"), owner);
    const std::string outside = outside_->path();
    make(outside + "/other", std::nullopt, 0755, owner);
    make(outside + "/other/file.txt", "another folder outside the desk\n", 0644, owner);
    make(outside + "/root-only.txt", "root's alone\n", 0600, 0);
    make(outside + "/own", std::nullopt, 0700, owner);
    make(outside + "/own/private.txt", "deskd's user's alone\n", 0600, owner);
    make(desk().root() + "/elsewhere", std::nullopt, 0755, owner);
    make(desk().root() + "/elsewhere/file.txt", "beside the desk\n", 0644, owner);
    make(desk().path("notes/x.md"), "a note\n", 0644, sandbox_host_uid(daemon()));
    make(desk().path("scratch/y.txt"), "scratch work\n", 0644, sandbox_host_uid(daemon()));
    // A root daemon's desk never runs as root; under the unprivileged one its own 0600
    // file is readable by uid alone, so only the view may refuse it.
    const Expect own_private = daemon() == Daemon::root ? Expect::refused : Expect::either;
    targets_ = {
        {"the desk's README.md", "README.md", Expect::allowed, Expect::refused},
        {"Memory.md", "Memory.md", Expect::allowed, Expect::allowed},
        {"a note", "notes/x.md", Expect::allowed, Expect::allowed},
        {"a scratch file", "scratch/y.txt", Expect::allowed, Expect::allowed},
        {"a user file outside the writable places", "public/key.txt", Expect::allowed, Expect::refused},
        {"the hidden file .env", ".env", Expect::refused, Expect::refused},
        {"a file in the hidden folder secrets/", "secrets/key.txt", Expect::refused, Expect::refused},
        {"another folder outside the desk", outside + "/other/file.txt", Expect::either, Expect::refused},
        {"a root-only 0600 file outside the desk", outside + "/root-only.txt", Expect::refused, Expect::refused},
        {"a 0600 file of deskd's own user outside the desk", outside + "/own/private.txt", own_private,
         Expect::refused},
        {"a folder beside the desk", desk().root() + "/elsewhere/file.txt", Expect::either, Expect::refused},
        {"/etc/shadow", "/etc/shadow", Expect::refused, Expect::refused},
        {"/etc/hostname", "/etc/hostname", Expect::allowed, Expect::refused},
        {"/proc/1/environ", "/proc/1/environ", Expect::either, Expect::refused},
    };
    // Each also through a link planted in scratch/, and through `..` (from scratch/ up to /
    // and down again for the paths outside the desk).
    for (size_t index = 0; index < targets_.size(); ++index) {
      const Target& target = targets_[index];
      const std::string absolute = target.path.front() == '/' ? target.path : desk().path(target.path);
      const std::string link = "scratch/link-" + std::to_string(index);
      fs::create_symlink(absolute, desk().path(link));
      linked_.push_back({target.label + ", through a link in scratch/", link, target.read, target.write});
      std::string climb = "memory/..";
      if (target.path.front() == '/') {
        climb = "scratch/..";
        for (const auto& part : fs::path(desk().directory()).relative_path()) climb += part.empty() ? "" : "/..";
      }
      linked_.push_back({target.label + ", through ..", climb + (target.path.front() == '/' ? "" : "/") + target.path,
                         target.read, target.write});
    }
    for (const char* system_file : {"/etc/shadow", "/etc/hostname"}) {
      system_files_.emplace_back(system_file, read_host_file(system_file));
    }
  }

  void TearDown() override {
    // A write that got through is undone, and says so.
    for (const auto& [path, contents] : system_files_) {
      if (contents && read_host_file(path) != contents) {
        ADD_FAILURE() << path << " was changed from inside a desk; restoring it";
        write_host_file(path, *contents, path == "/etc/shadow" ? 0640 : 0644);
      }
    }
    outside_.reset();
    SandboxTest::TearDown();
  }

  void make(const std::string& path, std::optional<std::string> contents, mode_t mode, uid_t owner) {
    if (contents) write_host_file(path, *contents, mode);
    else if (::mkdir(path.c_str(), mode) != 0) ADD_FAILURE() << "mkdir " << path;
    ::chmod(path.c_str(), mode);
    if (::lchown(path.c_str(), owner, owner) != 0) ADD_FAILURE() << "lchown " << path;
  }

  std::vector<Row> rows(Question question) const {
    std::vector<Row> result;
    for (const auto& list : {targets_, linked_}) {
      for (const Target& target : list)
        result.push_back({question, target.label, target.path, question == Question::read ? target.read : target.write});
    }
    return result;
  }

  std::vector<Answer> ask_file_tools(const std::vector<Row>& asked) const {
    std::vector<ToolCall> calls;
    for (const Row& row : asked) {
      const std::string path = json_string(row.path);
      if (row.question == Question::read) calls.push_back({"read_file", R"({"path":)" + path + "}"});
      if (row.question == Question::write)
        calls.push_back({"write_file", R"({"path":)" + path + R"(,"content":"deskd-agree\n"})"});
      if (row.question == Question::list) calls.push_back({"list_directory", R"({"path":)" + path + "}"});
    }
    SandboxRun run;
    const std::vector<ToolAnswer> replies = call_tools(daemon(), desk(), calls, &run);
    std::vector<Answer> answers;
    for (const ToolAnswer& reply : replies) {
      if (!reply.answered) ADD_FAILURE() << "deskd mcp did not answer every call\n" << run.describe();
      // A file read_file opened but will not show (NUL bytes, say) was read all the same.
      const bool opened = reply.text.find("is a binary file") != std::string::npos;
      const bool allowed = reply.answered && (!reply.is_error || opened);
      // What an allowed read returned is the file (/etc/shadow, say): kept out of the log.
      answers.push_back({allowed, allowed ? "" : one_line(reply.text)});
    }
    return answers;
  }

  std::vector<Answer> ask_bash(const std::vector<Row>& asked) const {
    std::string script;
    for (size_t index = 0; index < asked.size(); ++index) {
      const Row& row = asked[index];
      EXPECT_EQ(row.path.find('\''), std::string::npos) << row.path;
      const std::string path = "'" + row.path + "'";
      const std::string attempt = row.question == Question::read    ? "cat -- " + path + " 2>&1 >/dev/null"
                                  : row.question == Question::write ? "{ printf 'deskd-agree\\n' > " + path + "; } 2>&1"
                                                                    : "ls -A -- " + path + " 2>&1 >/dev/null";
      script += "if why=$(" + attempt + "); then echo 'row " + std::to_string(index) +
                " allowed'; else echo \"row " + std::to_string(index) + " refused ${why//$'\\n'/ }\"; fi\n";
    }
    const SandboxRun run = sandbox({"/bin/bash", "-c", script});
    EXPECT_EQ(run.exit_status, 0) << run.describe();
    std::vector<Answer> answers(asked.size(), Answer{false, "(no answer)"});
    std::istringstream lines(run.out);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream words(line);
      std::string row_word, outcome;
      size_t index = 0;
      if (!(words >> row_word >> index >> outcome) || row_word != "row" || index >= answers.size()) continue;
      std::string detail;
      std::getline(words, detail);
      answers[index] = {outcome == "allowed", one_line(detail)};
    }
    return answers;
  }

  // Asks both the same questions and reports.
  void expect_agreement(const std::vector<Row>& asked, bool bash_first) {
    std::vector<Answer> tools, bash;
    // Writes go to bash first: a file the tools created would otherwise be deskd's (root's)
    // and refuse bash for a reason of its own; WriteFileLeavesFilesTheDesksBashCanChange
    // asks that question by itself.
    if (bash_first) {
      bash = ask_bash(asked);
      tools = ask_file_tools(asked);
    } else {
      tools = ask_file_tools(asked);
      bash = ask_bash(asked);
    }
    report(asked, tools, bash);
    EXPECT_GE(asked.size(), 28u) << "the table lost rows";
  }

  // Fails once with every row where the two disagree, and once with every row where they
  // agree on an answer issue 11 does not give.
  void report(const std::vector<Row>& asked, const std::vector<Answer>& tools, const std::vector<Answer>& bash) const {
    std::string disagreements, wrong;
    for (size_t index = 0; index < asked.size(); ++index) {
      const Row& row = asked[index];
      const auto said = [](const Answer& answer) {
        return std::string(answer.allowed ? "allowed" : "refused") + (answer.detail.empty() ? "" : " (" + answer.detail + ")");
      };
      const std::string line = std::string(verb(row.question)) + " " + row.path + " [" + row.label +
                               "]: file tools " + said(tools[index]) + "; bash " + said(bash[index]) + "\n";
      if (tools[index].allowed != bash[index].allowed) disagreements += "  " + line;
      else if (row.expected != Expect::either && tools[index].allowed != (row.expected == Expect::allowed))
        wrong += "  " + line;
    }
    if (!disagreements.empty())
      ADD_FAILURE() << "the file tools and bash disagree on " << daemon_name(daemon()) << "'s desk:\n" << disagreements;
    if (!wrong.empty()) ADD_FAILURE() << "both enforcers agree, but not with issue 11:\n" << wrong;
  }

  std::unique_ptr<HostFolder> outside_;
  std::vector<Target> targets_;
  std::vector<Target> linked_;
  std::vector<std::pair<std::string, std::optional<std::string>>> system_files_;
};

TEST_P(EnforcersAgreeTest, ReadFileAndCatAgree) { expect_agreement(rows(Question::read), false); }

TEST_P(EnforcersAgreeTest, WriteFileAndRedirectionAgree) { expect_agreement(rows(Question::write), true); }

TEST_P(EnforcersAgreeTest, ListDirectoryAndLsAgree) {
  const std::string outside = outside_->path();
  const std::vector<Row> folders = {
      {Question::list, "the desk", ".", Expect::allowed},
      {Question::list, "notes/", "notes", Expect::allowed},
      {Question::list, "the hidden folder", "secrets", Expect::refused},
      {Question::list, "the hidden folder, through a link", "scratch/link-to-secrets", Expect::refused},
      {Question::list, "another folder outside the desk", outside + "/other", Expect::either},
      {Question::list, "a 0700 folder of deskd's own user", outside + "/own",
       daemon() == Daemon::root ? Expect::refused : Expect::either},
      {Question::list, "a folder beside the desk", desk().root() + "/elsewhere", Expect::either},
      {Question::list, "root's home", "/root", Expect::refused},
  };
  const std::vector<Answer> tools = ask_file_tools(folders);
  const std::vector<Answer> bash = ask_bash(folders);
  report(folders, tools, bash);
}

TEST_P(EnforcersAgreeTest, WriteFileLeavesFilesTheDesksBashCanChange) {
  // The file tools open with the desk's identity: what write_file creates in notes/ is the
  // desk's, as if bash had written it; a root deskd's file would be root's, and the desk's
  // running bash could not change it. (A new `deskd sandbox --desk` hands notes/ over again
  // before it starts, so only the owner is asked here.)
  SandboxRun run;
  const auto written = call_tools(daemon(), desk(), {{"write_file", R"({"path":"notes/by-tool.md","content":"one\n"})"}}, &run);
  ASSERT_TRUE(written.at(0).answered && !written.at(0).is_error) << written.at(0).text << run.describe();
  struct stat file {};
  struct stat folder {};
  ASSERT_EQ(::stat(desk().path("notes/by-tool.md").c_str(), &file), 0);
  ASSERT_EQ(::stat(desk().path("notes").c_str(), &folder), 0);
  EXPECT_EQ(file.st_uid, folder.st_uid) << "write_file made a file of deskd's (uid " << file.st_uid
                                        << "), not of the desk's (uid " << folder.st_uid << ", who owns notes/)";
}

DESKD_FOR_BOTH_DAEMONS(EnforcersAgreeTest);

}  // namespace
}  // namespace deskd::security_testing
