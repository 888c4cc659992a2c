// Masks a secret in a byte stream, in every spelling a relayed byte could
// carry it: raw, percent-encoded, and base64 at each of the three alignments
// (which covers "Authorization: Basic base64(user:token)" as an upstream hook
// sees it in its environment and might print it). A match becomes '*' bytes
// of the same length, so pkt-line framing around it stays valid.
//
//   cc::git::Redactor r(cc::git::secret_spellings(token));
//   send(r.feed(chunk));  ...  send(r.finish());
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace cc::git {

// The spellings of `secret` worth masking (empty for an empty secret).
std::vector<std::string> secret_spellings(std::string_view secret);

class Redactor {
public:
    explicit Redactor(std::vector<std::string> needles);
    // The bytes safe to pass on now. Only a tail that could be the start of a
    // needle is held back until more bytes (or finish) decide it.
    std::string feed(std::string_view data);
    std::string finish();
    // Masks a whole buffer at once.
    std::string whole(std::string_view data);
    bool masked() const { return masked_; }

private:
    std::vector<std::string> needles_;
    std::string held_;
    bool masked_ = false;
    void mask(std::string& buf);
};

}  // namespace cc::git
