package org.tent4j.runtime.control;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.DefaultByteBufHolder;

/**
 * One control-plane frame past its length prefix, its header read: kind, correlation id, service, the caller name it
 * claims; {@link #content()} is the payload. Reference-counted like the buffer it holds: whoever consumes it releases it.
 */
final class ControlFrame extends DefaultByteBufHolder {
    static final byte REQUEST = 0;
    static final byte REPLY = 1;
    static final byte ERROR = 2;

    final byte kind;
    final long id;
    final String service;
    final String claimed;

    ControlFrame(byte kind, long id, String service, String claimed, ByteBuf payload) {
        super(payload);
        this.kind = kind;
        this.id = id;
        this.service = service;
        this.claimed = claimed;
    }
}
