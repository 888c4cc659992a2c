// Line continuations as bash removes them: a backslash-newline pair is deleted
// from the input before any token is read, everywhere except inside single
// quotes and $'...', in comments, and in the bodies of here-documents whose
// delimiter is quoted. So `su\<nl>do`, `&\<nl>&`, `i\<nl>f` and `$\<nl>(id)`
// are `sudo`, `&&`, `if` and `$(id)`. parse() joins first and maps offsets
// back; a caller that wants the unjoined reading too (cc-classify judges
// both when they differ) sets Limits::join_continuations to false.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace cc::shell {

struct Joined {
    std::string text;
    // Offsets in `text` at which a pair was removed, ascending (a position
    // can repeat for consecutive pairs).
    std::vector<std::size_t> removed;
    // The source offset of an offset in `text`.
    std::size_t source_offset(std::size_t joined) const;
};

// Empty `removed` (and `text` left empty) when the source has no pair to remove.
Joined join_continuations(std::string_view source);

}  // namespace cc::shell
