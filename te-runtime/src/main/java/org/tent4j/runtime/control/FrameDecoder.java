package org.tent4j.runtime.control;

import java.nio.charset.StandardCharsets;
import java.util.List;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.MessageToMessageDecoder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.runtime.config.CoreKey;

/**
 * The first handler past the length prefix: reads a frame's header ({@code u8 kind}, {@code u64 id}, {@code u16 +
 * UTF-8 service}, {@code u16 + UTF-8 caller}) into a {@link ControlFrame}. A truncated header or an unknown kind closes
 * the connection and counts a bad frame.
 */
final class FrameDecoder extends MessageToMessageDecoder<ByteBuf> {
    private static final Logger log = LoggerFactory.getLogger(ControlPlaneNode.class);
    private final ControlPlaneNode node;

    FrameDecoder(ControlPlaneNode node) {
        this.node = node;
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        byte kind;
        long id;
        String service;
        String claimed;
        try {
            kind = in.readByte();
            id = in.readLong();
            service = in.readCharSequence(in.readUnsignedShort(), StandardCharsets.UTF_8).toString();
            claimed = in.readCharSequence(in.readUnsignedShort(), StandardCharsets.UTF_8).toString();
        } catch (IndexOutOfBoundsException e) {
            node.badFrames.increment();
            RefusalLog.warnSometimes(log, node.badFrames, "control plane of '{}': closing connection from {}: {} ({} is {} bytes)",
                    node.localSegment(), ctx.channel().remoteAddress(), "truncated frame", CoreKey.CONTROL_MAX_FRAME,
                    node.settings.maxFrame());
            ctx.close();
            return;
        }
        if (kind != ControlFrame.REQUEST && kind != ControlFrame.REPLY && kind != ControlFrame.ERROR) {
            node.badFrames.increment();
            RefusalLog.warnSometimes(log, node.badFrames, "control plane of '{}': dropping connection from {}: unknown frame kind {}",
                    node.localSegment(), ctx.channel().remoteAddress(), kind);
            ctx.close();
            return;
        }
        out.add(new ControlFrame(kind, id, service, claimed, in.retainedSlice()));
    }
}
