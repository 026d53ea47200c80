// Catch2's implementation, compiled once per build into a static library
// that every Catch2 test links (catch2_runner_dep). It is the slowest
// translation unit of the test tree (tens of seconds, minutes under a
// sanitizer): compiling it once instead of once per test program is most of
// what keeps CI short. CATCH_CONFIG_RUNNER gives the implementation without
// a main(); programs with options of their own (--backend, --scenario, ...)
// define main() around accel_test::run (runner.hpp), defined here because
// Catch2 v2 declares Catch::Session only next to its implementation.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "runner.hpp"
#include "support.hpp"

namespace accel_test {

int run(int argc, char** argv, const std::vector<Option>& options,
        const std::function<int(Parsed&)>& setup) {
  Catch::Session session;
  auto cli = session.cli();
  for (const Option& o : options) cli = cli | Catch::clara::Opt(*o.value, o.hint)[o.flag](o.help);
  session.cli(cli);
  int rc = session.applyCommandLine(argc, argv);
  if (rc != 0) return rc;
  auto& cfg = session.configData();
  if (cfg.showHelp) return 0;
  // A name filter that matches nothing (a typo, or a comma read as a
  // separator) must not pass with nothing run.
  cfg.warnings = static_cast<Catch::WarnAbout::What>(cfg.warnings | Catch::WarnAbout::NoTests);
  Parsed parsed;
  parsed.listing = cfg.listTests || cfg.listTestNamesOnly || cfg.listTags || cfg.listReporters;
  parsed.filters = &cfg.testsOrTags;
  if (setup) {
    rc = setup(parsed);
    if (rc >= 0) return rc;
  }
  session.useConfigData(cfg);
  rc = session.run();
  // A test that could not run its subject said so (accel_test::skip): Meson
  // counts exit status 77 as SKIP, never as OK. A failure stays a failure.
  if (rc == 0 && skipped()) return 77;
  return rc;
}

}  // namespace accel_test
