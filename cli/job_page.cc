#include "cli/job_page.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "cli/status.h"
#include "trainer/chart.h"

namespace sampan {
namespace {

using Key = std::pair<int, int>;  // (role, index)

std::string Bytes(uint64_t b) {
  if (b >= (1ull << 30)) return absl::StrFormat("%.1f GiB", b / 1073741824.0);
  if (b >= (1ull << 20)) return absl::StrFormat("%.0f MiB", b / 1048576.0);
  return absl::StrFormat("%.0f KiB", b / 1024.0);
}

// "12,345,678"
std::string Count(uint64_t n) {
  std::string digits = absl::StrCat(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string Who(int role, int index) {
  return absl::StrCat(role == coord::PSERVER ? "pserver " : "trainer ", index);
}

bool Streaming(const coord::JobStatusResponse& s) {
  for (const coord::TrainerProgress& p : s.trainers()) {
    if (!p.pass().empty() || p.passes_done() > 0 || !p.last_pass().empty()) {
      return true;
    }
  }
  return false;
}

std::string VersionName(const coord::PassResult& r) {
  return absl::StrFormat("v-%06d %s", r.version(), r.base() ? "base" : "delta");
}

// A row of the summary table; `id` and the raw value are for scripts and
// tests reading the page.
std::string Row(const std::string& label, const std::string& id,
                const std::string& raw, const std::string& text) {
  return absl::StrCat("<tr><th>", EscapeHtml(label), "</th><td id=\"", id,
                      "\" data-value=\"", EscapeHtml(raw), "\">",
                      EscapeHtml(text), "</td></tr>\n");
}

}  // namespace

JobPage::JobPage(Options options) : options_(std::move(options)) {}

void JobPage::Update(const coord::JobStatusResponse& status, absl::Time now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!have_) {
    first_ = now;
    Event(0, status.coordinator_incarnations() > 1
                 ? absl::StrFormat("coordinator restarted (incarnation %d, "
                                   "epoch %d); the page's history starts here",
                                   status.coordinator_incarnations(),
                                   status.coordinator_epoch())
                 : "coordinator up");
  }
  const double t = absl::ToDoubleSeconds(now - first_);
  Events(status, t);  // the first against nothing: all is news
  Rates(status, t);
  Sampled(status, t);
  for (const coord::TrainerProgress& p : status.trainers()) {
    const coord::PassResult& r = p.last_result();
    if (!r.name().empty()) passes_[r.index()] = r;
  }
  last_ = status;
  last_t_ = t;
  have_ = true;
}

void JobPage::Event(double t, const std::string& text) {
  events_.emplace_front(t, text);
  while (events_.size() > options_.max_events) events_.pop_back();
}

// What changed since the last snapshot, as a person would say it.
void JobPage::Events(const coord::JobStatusResponse& now, double t) {
  auto compare = [&](const auto& before_list, const auto& now_list) {
    std::map<int, const coord::Member*> before;
    for (const coord::Member& m : before_list) before[m.index()] = &m;
    for (const coord::Member& m : now_list) {
      const std::string who = Who(m.role(), m.index());
      auto it = before.find(m.index());
      if (it == before.end()) {
        Event(t, absl::StrCat(who, " joined", m.address().empty() ? "" : " at ",
                              m.address()));
        continue;
      }
      const coord::Member& b = *it->second;
      if (m.incarnation() > b.incarnation()) {
        Event(t, absl::StrFormat("%s restarted (incarnation %d) at %s", who,
                                 m.incarnation(), m.address()));
      } else if (b.alive() && !m.alive()) {
        Event(t, absl::StrFormat("%s stopped heartbeating (last %.1f s ago)",
                                 who, m.heartbeat_age_seconds()));
      } else if (!b.alive() && m.alive()) {
        Event(t, absl::StrCat(who, " heartbeats again"));
      }
    }
  };
  compare(last_.spec().pservers(), now.spec().pservers());
  compare(last_.spec().trainers(), now.spec().trainers());
  for (int r = 0; r < now.trainers_size() && r < last_.trainers_size(); ++r) {
    if (now.trainers(r).finished() && !last_.trainers(r).finished()) {
      Event(t, absl::StrFormat("trainer %d finished its input (%s examples)", r,
                               Count(now.trainers(r).examples())));
    }
  }
  const coord::CheckpointStatus& c = now.checkpoints();
  if (c.completed() > last_.checkpoints().completed()) {
    Event(t, absl::StrFormat("checkpoint %d complete in %.1f s", c.last_epoch(),
                             c.last_seconds()));
  }
  if (c.abandoned() > last_.checkpoints().abandoned()) {
    Event(t, absl::StrCat("abandoned ", c.last_abandoned_reason()));
  }
  const coord::FleetStatus& f = now.fleet();
  if (last_.fleet().wanted() != 0 && f.wanted() != last_.fleet().wanted()) {
    Event(t, absl::StrFormat("rescale asked: %d -> %d pservers", f.size(),
                             f.wanted()));
  }
  if (!f.last_error().empty() && f.last_error() != last_.fleet().last_error()) {
    Event(t, absl::StrCat("shard move failed (retried): ", f.last_error()));
  }
  if (f.shards_moved() > last_.fleet().shards_moved() &&
      f.shards_to_move() == 0 && last_.fleet().shards_to_move() > 0) {
    Event(t, absl::StrFormat("rescale done: %d pservers", f.size()));
  }
  if (!now.trainers().empty()) {
    const coord::PassResult& r = now.trainers(0).last_result();
    if (!r.name().empty() && !passes_.count(r.index())) {
      Event(t, absl::StrFormat("pass %d (%s) trained; published %s, %.1f s "
                               "after its marker",
                               r.index(), r.name(), VersionName(r),
                               r.freshness_seconds()));
    }
  }
  if (JobState(now) == "FINISHED" && JobState(last_) != "FINISHED") {
    Event(t, "every trainer finished: the job is done");
  }
}

void JobPage::Rates(const coord::JobStatusResponse& status, double t) {
  auto fold = [&](Key key, uint64_t count) {
    auto it = rate_base_.find(key);
    if (it == rate_base_.end() || count < it->second.count) {
      rate_base_[key] = {t, count};  // new, or restarted from zero
      rates_.erase(key);
      return;
    }
    if (t - it->second.t >= 5) {
      rates_[key] = (count - it->second.count) / (t - it->second.t);
      it->second = {t, count};
    }
  };
  for (int r = 0; r < status.trainers_size(); ++r) {
    fold({coord::TRAINER, r}, status.trainers(r).examples());
  }
  for (const coord::PserverLoad& l : status.pserver_loads()) {
    fold({coord::PSERVER, l.index()}, l.keys_pulled() + l.keys_pushed());
  }
}

void JobPage::Sampled(const coord::JobStatusResponse& status, double t) {
  const JobTotals now = SumTrainers(status);
  if (now.examples > 0 && eta_t0_ < 0) {
    eta_t0_ = t;
    eta_f0_ = now.fraction;
  }
  if (have_ && ++skipped_ < stride_) return;
  skipped_ = 0;
  if (have_ && t > sample_t_ && now.examples >= sample_examples_) {
    Sample s;
    s.t = t;
    const uint64_t n = now.examples - sample_examples_;
    s.examples_per_second = n / (t - sample_t_);
    s.loss = n > 0 ? (now.loss_sum - sample_loss_sum_) / n
                   : (samples_.empty() ? 0 : samples_.back().loss);
    s.auc = now.examples > 0 ? now.auc_weighted / now.examples : 0.5;
    if (now.examples > 0) samples_.push_back(s);
  }
  sample_t_ = t;
  sample_examples_ = now.examples;
  sample_loss_sum_ = now.loss_sum;
  if (samples_.size() > options_.max_points) {
    // Halve the resolution: keep every other sample, sample half as often.
    size_t kept = 0;
    for (size_t i = 0; i < samples_.size(); i += 2) {
      samples_[kept++] = samples_[i];
    }
    samples_.resize(kept);
    stride_ *= 2;
  }
}

// The live page's script: fetches the body every REFRESH_MS with the token
// of the address's #token=... fragment (a fragment is never sent to a
// server by itself).
constexpr char kShellScript[] = R"js(
const token = new URLSearchParams(location.hash.slice(1)).get('token');
let refreshes = 0, failures = 0;
async function refresh() {
  const status = document.getElementById('connection');
  try {
    const r = await fetch('/job/body', {cache: 'no-store',
        headers: token ? {Authorization: 'Bearer ' + token} : {}});
    if (!r.ok) throw new Error('HTTP ' + r.status + (r.status == 401 ?
        ': add #token=<the job token> to the address' : ''));
    document.getElementById('job').innerHTML = await r.text();
    document.body.dataset.refreshes = ++refreshes;
    status.textContent = 'live: updated ' + new Date().toLocaleTimeString() +
        ', every REFRESH_S s';
    status.className = '';
    failures = 0;
  } catch (e) {
    // One failed fetch is a blip; two in a row are news.
    if (++failures < 2) { setTimeout(refresh, 500); return; }
    status.textContent = 'cannot reach the coordinator (' + e.message +
        '); the job may have ended: its output_dir has job.html. Retrying.';
    status.className = 'dead';
  }
  setTimeout(refresh, REFRESH_MS);
}
refresh();
)js";

std::string JobPage::Shell() const {
  const std::string script = absl::StrReplaceAll(
      kShellScript,
      {{"REFRESH_MS",
        absl::StrCat(static_cast<int>(options_.refresh_seconds * 1000))},
       {"REFRESH_S", absl::StrCat(options_.refresh_seconds)}});
  return absl::StrCat(
      HtmlPageHead("Sampan: live job page"),
      "<p id=\"connection\">connecting to the coordinator&hellip;</p>\n"
      "<div id=\"job\"></div>\n<script>",
      script, "</script>\n</body></html>\n");
}

std::string JobPage::Body() const {
  std::lock_guard<std::mutex> lock(mu_);
  return BodyLocked();
}

std::string JobPage::Frozen() const {
  std::lock_guard<std::mutex> lock(mu_);
  return absl::StrCat(HtmlPageHead(options_.job_name), BodyLocked(),
                      "</body></html>\n");
}

std::string JobPage::BodyLocked() const {
  if (!have_) return "<p>no status from the coordinator yet</p>\n";
  return absl::StrCat(SummaryHtml(), ChartsHtml(), FleetHtml(), VersionsHtml(),
                      EventsHtml());
}

std::string JobPage::SummaryHtml() const {
  const JobTotals t = SumTrainers(last_);
  const std::string state = JobState(last_);
  const bool stream = Streaming(last_);
  std::string html = "<table id=\"summary\">\n";
  html += Row("job", "job", options_.job_name, options_.job_name);
  html += Row("state", "state", state, state);
  if (!stream) {
    std::string eta = "unknown yet";
    if (state == "FINISHED") {
      eta = "done";
    } else if (eta_t0_ >= 0 && t.fraction > eta_f0_ && last_t_ > eta_t0_) {
      eta = Clock((last_t_ - eta_t0_) * (1 - t.fraction) /
                  (t.fraction - eta_f0_));
    }
    html += Row("progress", "progress", absl::StrFormat("%.4f", t.fraction),
                absl::StrFormat("%.1f%% done, ETA %s", 100 * t.fraction, eta));
  } else {
    uint64_t passes = 0;
    std::string pass = "waiting for the next pass";
    for (const coord::TrainerProgress& p : last_.trainers()) {
      passes = std::max(passes, p.passes_done());
      if (!p.pass().empty()) pass = absl::StrCat("training ", p.pass());
    }
    html += Row("passes", "passes", absl::StrCat(passes),
                absl::StrFormat("%d done; %s", passes, pass));
  }
  html +=
      Row("examples", "examples", absl::StrCat(t.examples), Count(t.examples));
  const double rate =
      samples_.empty() ? 0 : samples_.back().examples_per_second;
  html +=
      Row("examples/s", "examples-per-second", absl::StrFormat("%.0f", rate),
          Count(static_cast<uint64_t>(rate)));
  const double loss = samples_.empty() ? 0 : samples_.back().loss;
  html += Row("train loss (latest interval)", "loss",
              absl::StrFormat("%.4f", loss), absl::StrFormat("%.4f", loss));
  const double auc = t.examples > 0 ? t.auc_weighted / t.examples : 0.5;
  html += Row("train AUC (streaming)", "auc", absl::StrFormat("%.4f", auc),
              absl::StrFormat("%.4f", auc));
  html += Row("elapsed", "elapsed", absl::StrFormat("%.0f", last_t_),
              Clock(last_.elapsed_seconds()));
  html += Row("coordinator", "coordinator",
              absl::StrCat(last_.coordinator_incarnations()),
              absl::StrFormat("epoch %d, restarted %d time(s)",
                              last_.coordinator_epoch(),
                              last_.coordinator_incarnations() - 1));
  std::string fleet = FleetLine(last_.fleet());
  if (fleet.empty()) {
    fleet = absl::StrFormat("%d pservers, %d shards, map version %d",
                            last_.spec().num_pservers(),
                            last_.spec().shard_map().owner_size(),
                            last_.spec().shard_map().version());
  }
  html +=
      Row("fleet", "fleet", absl::StrCat(last_.spec().num_pservers()), fleet);
  return html + "</table>\n";
}

std::string JobPage::ChartsHtml() const {
  ChartSeries rate{"job", {}}, loss{"train (per interval)", {}},
      auc{"train (streaming)", {}};
  for (const Sample& s : samples_) {
    rate.points.emplace_back(s.t, s.examples_per_second);
    loss.points.emplace_back(s.t, s.loss);
    auc.points.emplace_back(s.t, s.auc);
  }
  std::string html = "<div id=\"charts\">\n";
  html += RenderChart("Throughput", "examples/s", {rate});
  html += RenderChart("Train loss", "logloss", {loss});
  html += RenderChart("Train AUC", "AUC", {auc});
  if (!passes_.empty()) {
    ChartSeries progressive{"scored before training", {}},
        fresh{"marker to published", {}};
    for (const auto& [index, r] : passes_) {
      if (r.rows_scored() > 0) {
        progressive.points.emplace_back(index, r.auc());
      }
      fresh.points.emplace_back(index, r.freshness_seconds());
    }
    html +=
        RenderChart("Progressive AUC per pass", "AUC", {progressive}, "pass");
    html +=
        RenderChart("Version freshness per pass", "seconds", {fresh}, "pass");
  }
  return html + "</div>\n";
}

std::string JobPage::FleetHtml() const {
  std::string html =
      "<h2>Fleet</h2>\n<table id=\"fleet\"><tr><th>member</th>"
      "<th>address</th><th>alive</th><th>restarts</th><th>last heartbeat</th>"
      "<th>examples/s</th><th>keys/s</th><th>rows</th><th>memory</th>"
      "<th>progress</th></tr>\n";
  std::map<int, const coord::PserverLoad*> loads;
  for (const coord::PserverLoad& l : last_.pserver_loads()) {
    loads[l.index()] = &l;
  }
  auto rate = [&](Key key) {
    auto it = rates_.find(key);
    return it == rates_.end() ? std::string("&ndash;")
                              : Count(static_cast<uint64_t>(it->second));
  };
  auto row = [&](const coord::Member& m, const std::string& cells) {
    const uint64_t restarts = m.incarnation() > 0 ? m.incarnation() - 1 : 0;
    absl::StrAppendFormat(
        &html,
        "<tr class=\"member%s\" data-role=\"%s\" data-index=\"%d\" "
        "data-alive=\"%d\" data-restarts=\"%d\"><th>%s</th><td>%s</td>"
        "<td>%s</td><td>%d</td><td>%.1f s ago</td>%s</tr>\n",
        m.alive() ? "" : " dead",
        m.role() == coord::PSERVER ? "pserver" : "trainer", m.index(),
        m.alive() ? 1 : 0, restarts, Who(m.role(), m.index()),
        EscapeHtml(m.address()), m.alive() ? "yes" : "NO", restarts,
        m.heartbeat_age_seconds(), cells);
  };
  for (const coord::Member& m : last_.spec().pservers()) {
    auto it = loads.find(m.index());
    const coord::PserverLoad* l = it == loads.end() ? nullptr : it->second;
    row(m,
        absl::StrCat("<td>&ndash;</td><td>", rate({coord::PSERVER, m.index()}),
                     "</td><td>", l ? Count(l->rows()) : "&ndash;", "</td><td>",
                     l && l->resident_memory_bytes()
                         ? Bytes(l->resident_memory_bytes())
                         : "&ndash;",
                     "</td><td>&ndash;</td>"));
  }
  for (const coord::Member& m : last_.spec().trainers()) {
    const coord::TrainerProgress p = m.index() < last_.trainers_size()
                                         ? last_.trainers(m.index())
                                         : coord::TrainerProgress();
    row(m,
        absl::StrCat(
            "<td>", rate({coord::TRAINER, m.index()}),
            "</td><td>&ndash;</td><td>&ndash;</td><td>",
            p.resident_memory_bytes() ? Bytes(p.resident_memory_bytes())
                                      : "&ndash;",
            "</td><td>",
            p.finished() ? "finished"
                         : absl::StrFormat("%.1f%%", 100 * p.fraction_done()),
            "</td>"));
  }
  return html + "</table>\n";
}

std::string JobPage::VersionsHtml() const {
  const coord::CheckpointStatus& c = last_.checkpoints();
  std::string html =
      "<h2>Checkpoints and model versions</h2>\n<p id=\"checkpoints\">";
  const double now_unix = absl::ToUnixMillis(first_) / 1e3 + last_t_;
  if (c.completed() == 0) {
    html += "no checkpoint completed yet";
  } else {
    absl::StrAppendFormat(&html,
                          "%d checkpoint(s) completed; the newest, %d, %s ago "
                          "(took %.1f s)",
                          c.completed(), c.last_epoch(),
                          Clock(now_unix - c.last_completed_unix_seconds()),
                          c.last_seconds());
  }
  if (c.abandoned() > 0) {
    absl::StrAppend(&html, "; ", c.abandoned(),
                    " abandoned (last: ", EscapeHtml(c.last_abandoned_reason()),
                    ")");
  }
  html += "</p>\n";
  if (passes_.empty()) return html;
  html +=
      "<table id=\"versions\"><tr><th>pass</th><th>name</th><th>version</th>"
      "<th>freshness</th><th>rows scored</th><th>progressive AUC</th>"
      "<th>logloss</th><th>rows evicted</th></tr>\n";
  // Newest first, the last 50.
  int shown = 0;
  for (auto it = passes_.rbegin(); it != passes_.rend() && shown < 50;
       ++it, ++shown) {
    const coord::PassResult& r = it->second;
    absl::StrAppendFormat(
        &html,
        "<tr><td>%d</td><td>%s</td><td>%s</td><td>%.1f s</td><td>%s</td>"
        "<td>%.4f</td><td>%.4f</td><td>%s</td></tr>\n",
        r.index(), EscapeHtml(r.name()), VersionName(r), r.freshness_seconds(),
        Count(r.rows_scored()), r.auc(), r.logloss(), Count(r.rows_evicted()));
  }
  return html + "</table>\n";
}

std::string JobPage::EventsHtml() const {
  std::string html = "<h2>Events</h2>\n<ol id=\"events\" reversed>\n";
  for (const auto& [t, text] : events_) {
    absl::StrAppend(&html, "<li><time>", Clock(t), "</time> ", EscapeHtml(text),
                    "</li>\n");
  }
  return html + "</ol>\n";
}

}  // namespace sampan
