// What a desk writes is shown on a person's terminal, never obeyed: every class of byte a
// terminal acts on comes out escaped, ordinary text (non-ASCII letters too) as it was, and
// paths quoted so that they paste back into bash as the same bytes.

#include "base/terminal_text.h"

#include <gtest/gtest.h>

#include <string>

namespace deskd {
namespace {

// Whether `text` holds a byte a terminal acts on: C0 (other than those allowed), DEL, or
// the UTF-8 of a C1 control.
bool holds_raw_control(std::string_view text, std::string_view allowed = "") {
  for (std::size_t index = 0; index < text.size(); ++index) {
    const auto byte = static_cast<unsigned char>(text[index]);
    if ((byte < 0x20 || byte == 0x7F) && allowed.find(static_cast<char>(byte)) == std::string_view::npos) return true;
    if (byte == 0xC2 && index + 1 < text.size() && static_cast<unsigned char>(text[index + 1]) <= 0x9F) return true;
  }
  return false;
}

TEST(TerminalTextTest, OrdinaryTextIsUnchanged) {
  for (const std::string text : {"plain words, digits 0123 and punctuation !\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
                                 "नमस्ते दुनिया — हिन्दी पाठ", "Café, naïve, Ærø, Łódź, ελληνικά, 日本語のファイル",
                                 "emoji 🙂 and math ½ ≤ ∞", "a ∕ division slash in prose stays", ""}) {
    EXPECT_EQ(terminal_text(text), text);
    EXPECT_EQ(terminal_text(text, LineBreaks::kept), text);
  }
}

TEST(TerminalTextTest, EscapeAndC0ControlsAreEscaped) {
  EXPECT_EQ(terminal_text("\x1b[1A\x1b[2Kgone"), "\\e[1A\\e[2Kgone");
  EXPECT_EQ(terminal_text("\x1b]0;owned\x07title"), "\\e]0;owned\\x07title");
  EXPECT_EQ(terminal_text("over\rwrite"), "over\\rwrite");
  EXPECT_EQ(terminal_text(std::string_view("nul\0bell\x07" "back\x08" "form\x0c", 19)), "nul\\x00bell\\x07back\\x08form\\x0c");
  EXPECT_EQ(terminal_text("\x01\x1f"), "\\x01\\x1f");
}

TEST(TerminalTextTest, DelIsEscaped) { EXPECT_EQ(terminal_text("a\x7f" "b"), "a\\x7fb"); }

TEST(TerminalTextTest, LineBreaksAreEscapedUnlessKept) {
  EXPECT_EQ(terminal_text("a\nFAKE-ENTRY.md\tx"), "a\\nFAKE-ENTRY.md\\tx");
  EXPECT_EQ(terminal_text("line one\n\tline two\n", LineBreaks::kept), "line one\n\tline two\n");
  // Kept line breaks keep nothing else: a carriage return still cannot rewrite a line.
  EXPECT_EQ(terminal_text("ok\r\x1b[2Kforged\n", LineBreaks::kept), "ok\\r\\e[2Kforged\n");
}

TEST(TerminalTextTest, C1ControlsAreEscaped) {
  // U+009B is CSI on terminals that take 8-bit controls; U+0085 is NEL.
  EXPECT_EQ(terminal_text("a\xc2\x9b" "2Kb\xc2\x85" "c\xc2\x80\xc2\x9f"), "a\\u009b2Kb\\u0085c\\u0080\\u009f");
}

TEST(TerminalTextTest, BidiControlsAreEscaped) {
  EXPECT_EQ(terminal_text("invoice\u202egpj.exe"), "invoice\\u202egpj.exe");
  EXPECT_EQ(terminal_text("\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069\u200e\u200f\u061c"),
            "\\u202a\\u202b\\u202c\\u202d\\u2066\\u2067\\u2068\\u2069\\u200e\\u200f\\u061c");
}

TEST(TerminalTextTest, InvisibleCodePointsAreEscaped) {
  EXPECT_EQ(terminal_text("pl\u200ban\u200c.\u200dmd"), "pl\\u200ban\\u200c.\\u200dmd");
  EXPECT_EQ(terminal_text("\u2060\u2061\u2062\u2063\u2064\ufeff\u00ad\u180e\u2028\u2029"),
            "\\u2060\\u2061\\u2062\\u2063\\u2064\\ufeff\\u00ad\\u180e\\u2028\\u2029");
  // Tag characters smuggle invisible ASCII; past U+FFFF they are shown with \U.
  EXPECT_EQ(terminal_text("x\U000e0041\U000e007f"), "x\\U000e0041\\U000e007f");
}

TEST(TerminalTextTest, InvalidUtf8BytesAreEscapedOneByOne) {
  EXPECT_EQ(terminal_text("a\xff" "b"), "a\\xffb");
  EXPECT_EQ(terminal_text("cut \xe2\x88"), "cut \\xe2\\x88");                    // a sequence cut short
  EXPECT_EQ(terminal_text("\xc0\xaf"), "\\xc0\\xaf");                            // an overlong '/'
  EXPECT_EQ(terminal_text("\xed\xa0\x80"), "\\xed\\xa0\\x80");                   // a surrogate
  EXPECT_EQ(terminal_text("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");          // past U+10FFFF
  EXPECT_EQ(terminal_text("\x9b" "2K"), "\\x9b2K");                              // a raw 8-bit CSI
}

TEST(TerminalTextTest, NoEscapedTextHoldsARawControl) {
  std::string every_byte;
  for (int byte = 0; byte < 256; ++byte) every_byte += static_cast<char>(byte);
  every_byte += "\xc2\x80\xc2\x9b\xc2\x9f";
  EXPECT_FALSE(holds_raw_control(terminal_text(every_byte)));
  EXPECT_FALSE(holds_raw_control(terminal_text(every_byte, LineBreaks::kept), "\n\t"));
  EXPECT_FALSE(holds_raw_control(terminal_path(every_byte)));
}

TEST(TerminalPathTest, OrdinaryPathsAreAsTheyAre) {
  for (const std::string path : {"/var/lib/deskd/desks/alpha/plan.md", "notes/2026-11-30_levels,v2+final@host:8080%",
                                 "/srv/desks/हिन्दी/योजना.md", "/home/zoë/Café.txt"}) {
    EXPECT_EQ(terminal_path(path), path);
  }
}

TEST(TerminalPathTest, UnusualPrintableCharactersAreSingleQuoted) {
  EXPECT_EQ(terminal_path("a b"), "'a b'");
  EXPECT_EQ(terminal_path("$HOME/*.md"), "'$HOME/*.md'");
  EXPECT_EQ(terminal_path("it's"), "'it'\\''s'");
  EXPECT_EQ(terminal_path("back\\slash"), "'back\\slash'");
  EXPECT_EQ(terminal_path(""), "''");
}

TEST(TerminalPathTest, ControlsAndInvisiblesAreDollarQuoted) {
  EXPECT_EQ(terminal_path("a\nb"), "$'a\\nb'");
  EXPECT_EQ(terminal_path("zz\x1b[2K\x1b[1G plan.md"), "$'zz\\e[2K\\e[1G plan.md'");
  EXPECT_EQ(terminal_path("it's\t\\x"), "$'it\\'s\\t\\\\x'");
  EXPECT_EQ(terminal_path("evil\u202etxt.sh"), "$'evil\\u202etxt.sh'");
  EXPECT_EQ(terminal_path("bad\xff"), "$'bad\\xff'");
}

TEST(TerminalPathTest, LookAlikeSlashesAreEscapedAndMarked) {
  const std::string forged = "/var/lib/deskd/desks/alpha/zz\x1b[2K\x1b[1G  \u2215var\u2215lib\u2215deskd\u2215plan.md";
  EXPECT_EQ(terminal_path(forged), "$'/var/lib/deskd/desks/alpha/zz\\e[2K\\e[1G  \\u2215var\\u2215lib\\u2215deskd\\u2215plan.md'" +
                                       std::string(kLookAlikeSlashMark));
  for (const char* alike : {"\u2215", "\u2044", "\u29f8", "\uff0f", "\u1735", "\u2571", "\u0338"}) {
    const std::string shown = terminal_path(std::string("a") + alike + "b");
    EXPECT_TRUE(shown.starts_with("$'a\\u")) << shown;
    EXPECT_TRUE(shown.ends_with(kLookAlikeSlashMark)) << shown;
  }
  // In prose a division slash is only a character; only a path is marked.
  EXPECT_EQ(terminal_text("a\u2215b"), "a\u2215b");
}

}  // namespace
}  // namespace deskd
