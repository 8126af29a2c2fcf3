// tsl-repl: an interactive REPL for shape experiments. On a terminal it uses
// libedit (line editing, history in ~/.tsl_history, tab completion); with
// stdin not a terminal it reads commands from stdin, prints no prompt and
// exits 1 if any command failed.
#include "tools/driver/ReplSession.h"

#include <histedit.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <unistd.h>

using namespace tsl;

namespace {

ReplSession *gSession = nullptr;
bool gContinuation = false;

const char *prompt(EditLine *) { return gContinuation ? "...> " : "tsl> "; }

/// Tab: complete the word before the cursor (one match inserts the rest,
/// several print the list).
unsigned char complete(EditLine *el, int) {
  const LineInfo *li = el_line(el);
  const char *start = li->cursor;
  while (start > li->buffer &&
         (std::isalnum(static_cast<unsigned char>(start[-1])) ||
          start[-1] == '_' || start[-1] == ':'))
    --start;
  std::string prefix(start, li->cursor);
  std::vector<std::string> matches = gSession->completions(prefix);
  if (matches.empty())
    return CC_ERROR;
  // Longest common prefix of the matches.
  std::string common = matches[0];
  for (const std::string &m : matches)
    while (m.compare(0, common.size(), common) != 0)
      common.pop_back();
  if (common.size() > prefix.size()) {
    el_insertstr(el, common.substr(prefix.size()).c_str());
    return CC_REFRESH;
  }
  if (matches.size() > 1) {
    std::cout << "\n";
    for (const std::string &m : matches)
      std::cout << m << "  ";
    std::cout << "\n";
    return CC_REDISPLAY;
  }
  return CC_REFRESH;
}

int interactive(ReplSession &session) {
  EditLine *el = el_init("tsl-repl", stdin, stdout, stderr);
  el_set(el, EL_PROMPT, prompt);
  el_set(el, EL_EDITOR, "emacs");
  History *hist = history_init();
  HistEvent ev;
  history(hist, &ev, H_SETSIZE, 1000);
  history(hist, &ev, H_SETUNIQUE, 1);
  std::string historyPath;
  if (const char *home = std::getenv("HOME"))
    historyPath = std::string(home) + "/.tsl_history";
  if (!historyPath.empty())
    history(hist, &ev, H_LOAD, historyPath.c_str());
  el_set(el, EL_HIST, history, hist);
  el_set(el, EL_ADDFN, "tsl-complete", "complete a name", complete);
  el_set(el, EL_BIND, "^I", "tsl-complete", nullptr);
  std::cout << "TSL REPL — :help for commands, :quit to leave\n";
  std::string pending;
  while (!session.quitRequested()) {
    gContinuation = !pending.empty();
    int count = 0;
    const char *line = el_gets(el, &count);
    if (!line)
      break;
    pending += line;
    if (ReplSession::needsMore(pending))
      continue;
    std::string entry = pending;
    pending.clear();
    while (!entry.empty() && (entry.back() == '\n' || entry.back() == '\r'))
      entry.pop_back();
    if (entry.find_first_not_of(" \t") == std::string::npos)
      continue;
    history(hist, &ev, H_ENTER, entry.c_str());
    if (!historyPath.empty())
      history(hist, &ev, H_SAVE, historyPath.c_str());
    session.execute(entry);
    std::cout.flush();
  }
  history_end(hist);
  el_end(el);
  return 0;
}

int scripted(ReplSession &session) {
  bool failed = false;
  std::string pending, line;
  while (!session.quitRequested() && std::getline(std::cin, line)) {
    pending += line + "\n";
    if (ReplSession::needsMore(pending))
      continue;
    failed |= !session.execute(pending);
    pending.clear();
    std::cout.flush();
  }
  if (!pending.empty() && !session.quitRequested())
    failed |= !session.execute(pending);
  return failed ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc > 1 && (std::strcmp(argv[1], "--help") == 0 ||
                   std::strcmp(argv[1], "-h") == 0)) {
    std::cout << "usage: tsl-repl [FILE...]   (files are loaded first; then "
                 "commands from the "
                 "terminal or stdin; :help lists them)\n";
    return 0;
  }
  ReplSession session(std::cout, std::cerr);
  gSession = &session;
  bool failed = false;
  for (int i = 1; i < argc; ++i)
    failed |= !session.execute(std::string(":load ") + argv[i]);
  int rc = isatty(STDIN_FILENO) ? interactive(session) : scripted(session);
  return failed ? 1 : rc;
}
