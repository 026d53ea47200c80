#include "log.hpp"

#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include <atomic>
#include <cstdio>

#include <spdlog/sinks/base_sink.h>

namespace accel::core {

spdlog::level::level_enum to_spdlog(accel_log_level_t level) {
  switch (level) {
    case ACCEL_LOG_TRACE:
      return spdlog::level::trace;
    case ACCEL_LOG_DEBUG:
      return spdlog::level::debug;
    case ACCEL_LOG_INFO:
      return spdlog::level::info;
    case ACCEL_LOG_WARN:
      return spdlog::level::warn;
    case ACCEL_LOG_ERROR:
      return spdlog::level::err;
    case ACCEL_LOG_CRITICAL:
      return spdlog::level::critical;
    case ACCEL_LOG_OFF:
      return spdlog::level::off;
    default:
      break;
  }
  return spdlog::level::warn;
}

namespace {

// What spdlog's stderr_sink_mt does (format, write, flush, under a lock),
// but with the lock reachable: spdlog keeps its console sinks' lock private.
class StderrSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::mutex& lock() { return mutex_; }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t buf;
    formatter_->format(msg, buf);
    std::fwrite(buf.data(), 1, buf.size(), stderr);
    std::fflush(stderr);
  }
  void flush_() override { std::fflush(stderr); }
};

std::atomic<StderrSink*> g_sink{nullptr};

// Warnings and errors are read by users: one short line each. Debug and
// trace output is read to reconstruct what the core and the plugins' threads
// did and when, so those levels add a timestamp (microseconds) and the
// thread id. spdlog formats per logger, so the configured level chooses.
constexpr const char* kPattern = "[accel] [%l] %v";
constexpr const char* kDetailedPattern = "[%Y-%m-%d %H:%M:%S.%f] [accel] [%l] [tid %t] %v";

// ACCEL_LOG_LEVEL in any case ("DEBUG", "Warn"): spdlog's parser knows only
// the lower-case names.
std::string lower_ascii(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::shared_ptr<spdlog::logger> make_logger() {
  auto sink = std::make_shared<StderrSink>();
  g_sink.store(sink.get(), std::memory_order_release);
  auto logger = std::make_shared<spdlog::logger>("accel", std::move(sink));
  logger->set_pattern(kPattern);
  auto level = spdlog::level::warn;
  if (const char* env = secure_getenv("ACCEL_LOG_LEVEL"); env != nullptr && *env != '\0') {
    // spdlog's parser maps unknown words to "off"; we keep warn instead and
    // say so (once: the logger is made once), since a typo should not
    // silence every warning.
    const std::string name = lower_ascii(env);
    auto parsed = spdlog::level::from_str(name);
    if (parsed == spdlog::level::off && name != "off") {
      logger->set_level(spdlog::level::warn);
      logger->warn(
          "ACCEL_LOG_LEVEL='{}' is not one of trace, debug, info, warn, error, "
          "critical, off (in any case); using warn",
          env);
    } else {
      level = parsed;
    }
  }
  logger->set_level(level);
  if (level <= spdlog::level::debug) logger->set_pattern(kDetailedPattern);
  logger->flush_on(spdlog::level::warn);
  return logger;
}

}  // namespace

std::mutex* log_mutex() {
  StderrSink* s = g_sink.load(std::memory_order_acquire);
  return s != nullptr ? &s->lock() : nullptr;
}

spdlog::logger& log() {
  // Leaked on purpose: plugins may log from their threads during exit.
  static spdlog::logger* logger = new spdlog::logger(*make_logger());
  return *logger;
}

}  // namespace accel::core
