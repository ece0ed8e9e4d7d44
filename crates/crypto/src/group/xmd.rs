//! RFC 9380 expand_message_xmd. TODO(helper): implement.
