// Every logging and standard-stream pattern of lint/rules.cpp, one use per line
// (reprise-logging; the input streams are reprise-io).
#include <syslog.h>

#include <cstdarg>
#include <cstdio>
#include <iostream>
#include <string>

#include "reprise/workflow.hpp"

// Neither fmt nor spdlog (nor C++23 <print>) is installed here: declarations
// with their names stand in, since the rules match qualified names.
namespace fmt {
void print(const char* format);
}
namespace spdlog {
void info(const char* message);
}
namespace std {
void println(const char* format);
}

reprise::Workflow<void> every_logger(reprise::WorkflowContext&, va_list args) {
  printf("a\n");                   // expect: reprise-logging
  fprintf(stdout, "b\n");          // expect: reprise-logging reprise-logging
  vprintf("%d\n", args);           // expect: reprise-logging
  vfprintf(stderr, "%d\n", args);  // expect: reprise-logging reprise-logging
  puts("c");                       // expect: reprise-logging
  fputs("d\n", stderr);            // expect: reprise-logging reprise-logging
  putchar('e');                    // expect: reprise-logging
  perror("f");                     // expect: reprise-logging
  syslog(LOG_INFO, "g");           // expect: reprise-logging
  vsyslog(LOG_INFO, "%d", args);   // expect: reprise-logging
  spdlog::info("h");               // expect: reprise-logging
  fmt::print("i\n");               // expect: reprise-logging
  std::println("j");               // expect: reprise-logging
  co_return;
}

reprise::Workflow<std::string> every_stream(reprise::WorkflowContext&) {
  std::cout << "a\n";    // expect: reprise-logging
  std::cerr << "b\n";    // expect: reprise-logging
  std::clog << "c\n";    // expect: reprise-logging
  std::wcout << L"d\n";  // expect: reprise-logging
  std::wcerr << L"e\n";  // expect: reprise-logging
  std::wclog << L"f\n";  // expect: reprise-logging
  std::string word;
  std::cin >> word;  // expect: reprise-io
  std::wstring wide;
  std::wcin >> wide;     // expect: reprise-io
  int c = fgetc(stdin);  // expect: reprise-io
  co_return word + static_cast<char>(c);
}
