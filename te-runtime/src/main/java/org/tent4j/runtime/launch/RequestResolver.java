package org.tent4j.runtime.launch;

import java.lang.foreign.MemorySegment;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.api.TransferException;
import org.tent4j.api.TransferRequest;
import org.tent4j.runtime.EngineState;
import org.tent4j.runtime.memory.RegisteredBuffer;
import org.tent4j.runtime.memory.Registrations;
import org.tent4j.runtime.peers.RemoteSegment;
import org.tent4j.runtime.peers.SegmentTable;
import org.tent4j.runtime.select.ResolvedRequest;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.SegmentDescriptor;

/**
 * Checks a request against local registrations and the target's descriptor: local memory registered and in bounds,
 * target segment open (and not gone), target range inside one published buffer (the cached descriptor is refetched
 * once on a miss), the buffer's permission allows the opcode. Any failure throws naming what was wrong.
 */
public final class RequestResolver {
    private final EngineState state;
    private final Registrations registrations;
    private final SegmentTable segments;
    private final String machineId;

    public RequestResolver(EngineState state, Registrations registrations, SegmentTable segments, String machineId) {
        this.state = state;
        this.registrations = registrations;
        this.segments = segments;
        this.machineId = machineId;
    }

    ResolvedRequest resolve(TransferRequest r) {
        state.ensureOpen();
        long length = r.length();
        if (length <= 0) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "length must be > 0, got " + length);
        }
        MemorySegment localMem = r.local();
        if (length > localMem.byteSize()) {
            throw new TransferException(ErrorCode.OUT_OF_BOUNDS, "length " + length + " exceeds the local memory segment of "
                    + localMem.byteSize() + " bytes");
        }
        RegisteredBuffer local = registrations.find(localMem.address(), length);
        if (local == null) {
            throw registrations.containing(localMem.address()) != null
                    ? new TransferException(ErrorCode.OUT_OF_BOUNDS, "local memory [0x" + Long.toHexString(localMem.address()) + ", +" + length
                    + ") runs past the end of its registered buffer " + registrations.containing(localMem.address()))
                    : new TransferException(ErrorCode.ADDRESS_NOT_REGISTERED, "local memory [0x" + Long.toHexString(localMem.address())
                    + ", +" + length + ") is not registered with engine '" + state.segmentName() + "'");
        }
        if (r.opcode() == Opcode.READ && (localMem.isReadOnly() || local.segment().isReadOnly())) {
            throw new TransferException(ErrorCode.PERMISSION_DENIED, "READ into local memory [0x" + Long.toHexString(localMem.address())
                    + ", +" + length + ") denied: it is a read-only segment");
        }
        if (!(r.target() instanceof RemoteSegment seg) || !segments.isOpen(seg)) {
            throw new TransferException(ErrorCode.UNKNOWN_SEGMENT, "target segment " + (r.target() == null ? "null" : "'"
                    + r.target().name() + "'") + " is not open in engine '" + state.segmentName() + "'");
        }
        if (seg.isGone()) {
            try {
                segments.refreshGone(seg);
            } catch (TransferException e) {
                throw new TransferException(ErrorCode.PEER_FAILED, "segment '" + seg.name()
                        + "' is gone: its descriptor was removed from the metadata store (" + e.getMessage() + ")");
            }
        }
        SegmentDescriptor desc = seg.descriptor();
        long target = r.targetOffset();
        BufferDescriptor remote = desc.findBuffer(target, length);
        if (remote == null && !seg.isLocal()) {
            // The peer may have registered the buffer after we cached its descriptor.
            desc = segments.refresh(seg);
            remote = desc.findBuffer(target, length);
        }
        if (remote == null) {
            BufferDescriptor start = desc.findBuffer(target, 0);
            throw start != null
                    ? new TransferException(ErrorCode.OUT_OF_BOUNDS, "target [0x" + Long.toHexString(target) + ", +" + length
                    + ") of segment '" + seg.name() + "' runs past the end of its buffer [0x" + Long.toHexString(start.address())
                    + ", +" + start.length() + ")")
                    : new TransferException(ErrorCode.ADDRESS_NOT_REGISTERED, "target offset 0x" + Long.toHexString(target)
                    + " (length " + length + ") is in no registered buffer of segment '" + seg.name() + "'");
        }
        if (!remote.permission().allowsRemote(r.opcode())) {
            throw new TransferException(ErrorCode.PERMISSION_DENIED, r.opcode() + " of [0x" + Long.toHexString(target) + ", +"
                    + length + ") denied: buffer of segment '" + seg.name() + "' is " + remote.permission());
        }
        return new ResolvedRequest(r, local, seg, desc, remote, local.location().kindOrCpu(), remote.location().kindOrCpu(),
                desc.machineId().equals(machineId));
    }
}
