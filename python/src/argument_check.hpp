// Argument checks that raise dlcp::Error(kInvalidArgument), which Python sees as
// dlcp.errors.InvalidArgumentError (both a RuntimeError, as torch backends raise, and a
// ValueError). The message is only built when the check fails.
#pragma once

#include <c10/util/StringUtil.h>

#include "dlcp/error.hpp"

namespace dlcp::python {

template <class... Parts>
void require(bool ok, const Parts&... parts) {
  if (!ok) throw Error(ErrorCode::kInvalidArgument, -1, c10::str(parts...));
}

}  // namespace dlcp::python
