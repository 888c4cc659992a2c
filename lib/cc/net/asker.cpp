#include "cc/net/asker.hpp"
#include "cc/core/json_writer.hpp"

#include <sys/wait.h>

#include <boost/asio.hpp>
#include <boost/process.hpp>
#include <boost/process/extend.hpp>

#include <unistd.h>

#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace cc::net {

namespace asio = boost::asio;
namespace bp = boost::process;

namespace {
// Approvers running at once, and host:port questions waiting for one. Past
// that an ask is deny (and not kept: asked again later it may get its turn).
constexpr std::size_t max_running = 4;
constexpr std::size_t max_waiting = 64;
constexpr std::size_t max_answer = 64 * 1024;
// In the approver, after its stdin and stdout are in place: every other
// descriptor closed, so it holds none of the proxy's sockets (Asio opens
// them without close-on-exec). Only async-signal-safe calls here.
struct CloseOthers : bp::extend::handler {
    template <typename Executor>
    void on_exec_setup(Executor&) const {
        if (::close_range(3, ~0U, 0) == 0) return;
        for (int fd = 3; fd < 65536; ++fd) ::close(fd);
    }
};

}  // namespace

struct Asker::Impl {
    policy::Approver approver;
    policy::Verdict rule;
    std::function<void(const std::string&)> log;
    asio::io_context io{1};
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
    std::thread thread;

    struct Entry {
        bool done = false;
        AskOutcome outcome;
        std::vector<Done> waiters;
    };
    std::mutex mu;
    std::map<std::string, Entry> entries;
    std::deque<std::pair<std::string, nlohmann::json>> queue;  // waiting for a free approver
    std::size_t running = 0;
    bool stopped = false;

    // One approver process: question in, answer out, exit status.
    struct Run : std::enable_shared_from_this<Run> {
        Impl& impl;
        std::string key;
        bp::async_pipe in, out;
        std::optional<bp::child> child;
        asio::steady_timer deadline, poll;
        std::string input, output;
        std::array<char, 4096> buf{};
        bool finished = false;
        Run(Impl& i, std::string k) : impl(i), key(std::move(k)), in(i.io), out(i.io), deadline(i.io), poll(i.io) {}
        ~Run() {
            if (child && !finished) {
                std::error_code ec;
                child->terminate(ec);
            }
        }
        void complete(const policy::Verdict& v) {
            if (finished) return;
            finished = true;
            boost::system::error_code ec;
            deadline.cancel();
            poll.cancel();
            in.close(ec);
            out.close(ec);
            impl.answered(key, v);
        }
        void read() {
            out.async_read_some(asio::buffer(buf), [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
                if (self->finished) return;
                if (!ec) {
                    if (self->output.size() < max_answer)
                        self->output.append(self->buf.data(), std::min(n, max_answer - self->output.size()));
                    self->read();
                    return;
                }
                self->wait_exit();  // end of its stdout: the answer is whole
            });
        }
        // Its stdout is closed; reap it without blocking (no SIGCHLD handler
        // is involved): poll every few milliseconds until the deadline.
        void wait_exit() {
            int status = 0;
            pid_t r = ::waitpid(child->id(), &status, WNOHANG);
            if (r == child->id()) {
                child->detach();  // reaped here: nothing left for bp::child to wait for or kill
                int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
                complete(policy::answer_verdict(impl.rule, code, output));
                return;
            }
            if (r < 0) {
                child->detach();
                complete(policy::failed_verdict(impl.rule, std::string("waitpid: ") + std::strerror(errno)));
                return;
            }
            poll.expires_after(std::chrono::milliseconds(5));
            poll.async_wait([self = shared_from_this()](boost::system::error_code tec) {
                if (!tec && !self->finished) self->wait_exit();
            });
        }
    };

    void start(const std::string& key, const nlohmann::json& question) {
        auto run = std::make_shared<Run>(*this, key);
        run->input = cc::json::write(question) + "\n";
        try {
            std::vector<std::string> args(approver.argv.begin() + 1, approver.argv.end());
            run->child.emplace(policy::approver_program(approver), bp::args(args), bp::std_in < run->in,
                               bp::std_out > run->out, bp::std_err > bp::null, CloseOthers{});
        } catch (const std::exception& e) {
            run->complete(policy::failed_verdict(rule, e.what()));
            return;
        }
        run->deadline.expires_after(approver.timeout);
        run->deadline.async_wait([run](boost::system::error_code ec) {
            if (ec || run->finished) return;
            std::error_code tec;
            run->child->terminate(tec);
            run->complete(policy::timeout_verdict(run->impl.rule, run->impl.approver));
        });
        asio::async_write(run->in, asio::buffer(run->input), [run](boost::system::error_code, std::size_t) {
            boost::system::error_code ec;
            run->in.close(ec);  // one question: end of file after it
        });
        run->read();
    }

    // On the Asker's thread: keep the outcome, wake the waiters, start the next.
    void answered(const std::string& key, const policy::Verdict& v) {
        AskOutcome o;
        o.allow = v.decision == policy::Decision::allow;
        // The approver's part of the reason (the rule's own reason is in the ready line).
        o.reason = v.reason.substr(v.reason.rfind("; ") == std::string::npos ? 0 : v.reason.rfind("; ") + 2);
        std::vector<Done> waiters;
        std::optional<std::pair<std::string, nlohmann::json>> next;
        {
            std::lock_guard<std::mutex> lock(mu);
            Entry& e = entries[key];
            e.done = true;
            e.outcome = o;
            waiters.swap(e.waiters);
            --running;
            if (!queue.empty() && !stopped) {
                next = std::move(queue.front());
                queue.pop_front();
                ++running;
            }
        }
        if (log) log("ask " + key + ": " + (o.allow ? "allow" : "deny") + " (" + o.reason + ")");
        bool first = true;
        for (auto& w : waiters) {
            AskOutcome mine = o;
            mine.cached = !first;
            first = false;
            w(mine);
        }
        if (next) start(next->first, next->second);
    }
};

Asker::Asker(policy::Approver approver, policy::Verdict rule, std::function<void(const std::string&)> log)
    : impl_(std::make_shared<Impl>()) {
    impl_->approver = std::move(approver);
    impl_->rule = std::move(rule);
    impl_->log = std::move(log);
    if (has_approver()) {
        impl_->work.emplace(impl_->io.get_executor());
        impl_->thread = std::thread([i = impl_.get()] {
            for (;;) {
                try {
                    i->io.run();
                    return;
                } catch (const std::exception& e) {  // a throwing handler: said, and the loop goes on
                    i->log(std::string("internal error in the approver loop (still serving): ") + e.what());
                } catch (...) {
                    i->log("internal error in the approver loop (still serving)");
                }
            }
        });
    }
}

Asker::~Asker() {
    std::vector<Done> waiters;
    {
        std::lock_guard<std::mutex> lock(impl_->mu);
        impl_->stopped = true;
    }
    if (impl_->thread.joinable()) {
        impl_->work.reset();
        impl_->io.stop();
        impl_->thread.join();
    }
    {
        std::lock_guard<std::mutex> lock(impl_->mu);
        for (auto& [key, e] : impl_->entries)
            for (auto& w : e.waiters) waiters.push_back(std::move(w));
        impl_->entries.clear();
        impl_->queue.clear();
    }
    for (auto& w : waiters) w(AskOutcome{false, "cc-egress is stopping", false});
    // Approvers still running are killed as their Runs go with the io_context.
}

bool Asker::has_approver() const { return !impl_->approver.argv.empty(); }

bool Asker::approved(const std::string& key) const {
    std::lock_guard<std::mutex> lock(impl_->mu);
    auto it = impl_->entries.find(key);
    return it != impl_->entries.end() && it->second.done && it->second.outcome.allow;
}

void Asker::ask(const std::string& key, nlohmann::json question, Done done) {
    if (!has_approver()) {
        done(AskOutcome{false, "ask without approver", false});
        return;
    }
    bool start_now = false;
    {
        std::unique_lock<std::mutex> lock(impl_->mu);
        if (impl_->stopped) {
            lock.unlock();
            done(AskOutcome{false, "cc-egress is stopping", false});
            return;
        }
        auto it = impl_->entries.find(key);
        if (it != impl_->entries.end()) {
            if (it->second.done) {
                AskOutcome o = it->second.outcome;
                o.cached = true;
                lock.unlock();
                done(o);
                return;
            }
            it->second.waiters.push_back(std::move(done));  // asked already: wait for that answer
            return;
        }
        if (impl_->running >= max_running && impl_->queue.size() >= max_waiting) {
            lock.unlock();
            done(AskOutcome{false, "too many questions waiting for the approver", false});
            return;
        }
        impl_->entries[key].waiters.push_back(std::move(done));
        if (impl_->running < max_running) {
            ++impl_->running;
            start_now = true;
        } else {
            impl_->queue.emplace_back(key, question);
        }
    }
    if (start_now) asio::post(impl_->io, [i = impl_.get(), key, q = std::move(question)] { i->start(key, q); });
}

}  // namespace cc::net
