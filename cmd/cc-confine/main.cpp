// cc-confine: may a file tool touch these paths? One JSON line per path, or a
// confined open from the shell (--open-read / --open-write). See cc-confine(1).
#include <CLI/CLI.hpp>

#include <cctype>
#include <iostream>

#include "cc/core/io.hpp"
#include "cc/core/cli.hpp"
#include "cc/core/tool.hpp"
#include "cc/fs/confine.hpp"
#include "cc/core/json_writer.hpp"

namespace {
constexpr const char* name = "cc-confine";

std::string line(const nlohmann::ordered_json& j) { return cc::json::write(j); }

void note_fallback(const cc::fs::Opened& o, bool wanted) {
    if (wanted && o.method == cc::fs::OpenMethod::walk)
        cc::tool::log(name, "openat2 is not available; used the O_NOFOLLOW component walk");
}
}  // namespace

int main(int argc, char** argv) {
    return cc::tool::run(name, [&] {
        CLI::App app{"Resolve paths against a workdir and shared roots; refuse anything that ends outside"};
        std::string workdir, open_read, open_write;
        std::vector<std::string> roots, paths;
        bool no_openat2 = false;
        cc::tool::standard_flags(app, name);
        app.add_option("--workdir", workdir, "directory relative paths resolve against")->required();
        app.add_option("--root", roots, "another directory paths may lie in (repeatable)")->allow_extra_args(false);
        auto* r = app.add_option("--open-read", open_read, "open PATH confined and copy it to stdout");
        auto* w = app.add_option("--open-write", open_write, "open PATH confined (created or truncated) and write stdin to it");
        r->excludes(w);
        app.add_flag("--no-openat2", no_openat2, "use the O_NOFOLLOW component walk instead of openat2");
        app.add_option("paths", paths, "paths to check");
        if (auto rc = cc::tool::parse(app, argc, argv, "cc-confine")) return *rc;
        bool opening = r->count() + w->count() > 0;
        if (opening && !paths.empty()) return cc::tool::report(name, cc::input_error("paths", "not taken with --open-read or --open-write"));
        if (!opening && paths.empty()) return cc::tool::report(name, cc::input_error("paths", "no path given"));

        auto conf = cc::fs::Confinement::make(workdir, roots);
        if (!conf) return cc::tool::report(name, conf.error());
        cc::fs::OpenOptions opts;
        opts.use_openat2 = !no_openat2;

        if (r->count()) {
            auto f = conf->open(open_read, cc::fs::Access::read, opts);
            if (!f) return cc::tool::report(name, f.error());
            note_fallback(*f, opts.use_openat2);
            auto data = cc::fs::read_all(f->fd.get());
            if (!data) return cc::tool::report(name, data.error());
            std::cout.write(data->data(), static_cast<std::streamsize>(data->size()));
            return cc::tool::exit_ok;
        }
        if (w->count()) {
            auto input = cc::io::read_input("-");  // all of stdin first: a failed read writes nothing
            if (!input) return cc::tool::report(name, input.error());
            auto f = conf->open(open_write, cc::fs::Access::write, opts);
            if (!f) {
                cc::tool::emit_line(line(cc::fs::to_json(conf->check(open_write))));
                return cc::tool::report(name, f.error());
            }
            note_fallback(*f, opts.use_openat2);
            if (auto s = cc::fs::write_all(f->fd.get(), *input); !s) return cc::tool::report(name, s.error());
            auto j = cc::fs::to_json(f->verdict);
            j["bytes"] = input->size();
            j["created"] = f->created;
            j["method"] = cc::fs::method_name(f->method);
            cc::tool::emit_line(line(j));
            return cc::tool::exit_ok;
        }
        bool all = true;
        for (const auto& p : paths) {
            auto v = conf->check(p);
            all = all && v.allowed;
            if (!cc::tool::emit_line(line(cc::fs::to_json(v)))) return cc::tool::exit_ok;
        }
        return all ? cc::tool::exit_ok : cc::tool::exit_failure;
    });
}
