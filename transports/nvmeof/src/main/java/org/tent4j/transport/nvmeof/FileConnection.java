package org.tent4j.transport.nvmeof;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.TransferException;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.Slice;
import org.tent4j.spi.TimeSource;

/**
 * The transport's link to one segment's files: its own (loopback) or a same-host peer's, opened by the path the
 * segment published. A peer's file is opened only under a configured root ({@code transports.nvmeof.peer_roots}) and
 * only if it is still the file the peer registered (device and inode as published), so a descriptor cannot steer this
 * engine into reading or writing an arbitrary file with its own rights.
 */
final class FileConnection implements PeerConnection {
    private final NvmeofTransport transport;
    private final boolean own;
    private final String segment;
    /** The engine's clock: slice deadlines are in its time, which a test may drive. */
    private final TimeSource clock;
    private volatile Entry[] entries;
    private volatile boolean open = true;

    /** One published file, opened on first use. */
    private static final class Entry {
        final long base;
        final long length;
        final Path path;
        final long dev;
        final long ino;
        volatile OpenFile file;

        Entry(long base, long length, Path path, long dev, long ino) {
            this.base = base;
            this.length = length;
            this.path = path;
            this.dev = dev;
            this.ino = ino;
        }
    }

    FileConnection(NvmeofTransport transport, SegmentDescriptor peer, boolean own, TimeSource clock) {
        this.transport = transport;
        this.clock = clock;
        this.own = own;
        this.segment = peer.name();
        this.entries = own ? new Entry[0] : entries(peer, null);
        refuseUnreachableFiles(peer);
    }

    /**
     * A peer whose published files all lie outside {@code peer_roots} can get nothing from this engine's nvmeof: say
     * so at connect, which moves its requests to the next transport (tcp file serving), rather than fail each of
     * them PERMISSION_DENIED at first use, which no transport would retry.
     */
    private void refuseUnreachableFiles(SegmentDescriptor peer) {
        Entry[] es = entries;
        if (es.length == 0) {
            return;
        }
        List<Path> paths = new ArrayList<>();
        for (Entry e : es) {
            if (fileAllowed(e.path)) {
                return;
            }
            paths.add(e.path);
        }
        throw new TransferException(ErrorCode.TRANSPORT_UNAVAILABLE, "nvmeof: segment '" + peer.name() + "' publishes "
                + "files " + paths + ", none under transports.nvmeof.peer_roots " + transport.peerRoots()
                + "; this engine opens peers' files only there");
    }

    private boolean fileAllowed(Path p) {
        return p.isAbsolute() && p.normalize().equals(p) && transport.peerFileAllowed(p);
    }

    private Entry[] entries(SegmentDescriptor d, Entry[] previous) {
        List<Entry> out = new ArrayList<>();
        for (BufferDescriptor b : d.buffers()) {
            if (b.location().kind() != MemoryKind.FILE || !b.transports().contains(NvmeofTransportProvider.ID)) {
                continue;
            }
            Map<String, String> a = b.attributes(NvmeofTransportProvider.ID);
            String path = a.get("path");
            if (path == null) {
                continue;
            }
            Entry kept = null;
            if (previous != null) {
                for (Entry e : previous) {
                    if (e.base == b.address() && e.path.toString().equals(path)) {
                        kept = e;
                    }
                }
            }
            out.add(kept != null ? kept : new Entry(b.address(), b.length(), Path.of(path), parse(a.get("dev")), parse(a.get("ino"))));
        }
        out.sort(Comparator.comparingLong(e -> e.base));
        return out.toArray(new Entry[0]);
    }

    private static long parse(String v) {
        try {
            return v == null ? -1 : Long.parseLong(v);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    @Override
    public int pathCount() {
        return transport.paths();
    }

    @Override
    public String pathName(int path) {
        return transport.pathName(path);
    }

    @Override
    public void post(Slice s) {
        if (!open) {
            s.fail(ErrorCode.PEER_FAILED, "nvmeof connection to segment '" + segment + "' is closed");
            return;
        }
        if (s.deadlineNanos() - clock.nanoTime() <= 0) {
            s.fail(ErrorCode.TIMEOUT, "nvmeof " + s.opcode() + " of [0x" + Long.toHexString(s.remoteAddress()) + ", +"
                    + s.length() + ") of segment '" + segment + "': the deadline passed before it was posted");
            return;
        }
        if (own) {
            // the engine's own files as registered now: its descriptor may have changed since this connection opened
            OpenFile f = transport.ownFile(s.remoteAddress(), s.length());
            if (f == null || !f.acquire()) {
                s.fail(ErrorCode.ADDRESS_NOT_REGISTERED, "nvmeof: no file registered with this engine holds [0x"
                        + Long.toHexString(s.remoteAddress()) + ", +" + s.length() + ")");
                return;
            }
            transport.submit(s, f);
            return;
        }
        Entry e = find(s.remoteAddress(), s.length());
        if (e == null) {
            s.fail(ErrorCode.ADDRESS_NOT_REGISTERED, "nvmeof: no file of segment '" + segment + "' holds [0x"
                    + Long.toHexString(s.remoteAddress()) + ", +" + s.length() + ")");
            return;
        }
        OpenFile f;
        try {
            f = file(e);
        } catch (TransferException ex) {
            s.fail(ex.code(), ex.getMessage());
            return;
        }
        if (!f.acquire()) {
            s.fail(ErrorCode.PEER_FAILED, "nvmeof " + s.opcode() + " of file " + f + ": the file was unregistered");
            return;
        }
        transport.submit(s, f);
    }

    private Entry find(long address, long length) {
        Entry[] a = entries;
        int lo = 0;
        int hi = a.length - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            Entry e = a[mid];
            if (address < e.base) {
                hi = mid - 1;
            } else if (address - e.base >= e.length) {
                lo = mid + 1;
            } else {
                return length >= 0 && address - e.base <= e.length - length ? e : null;
            }
        }
        return null;
    }

    private OpenFile file(Entry e) {
        OpenFile f = e.file;
        if (f != null) {
            return f;
        }
        synchronized (e) {
            if (e.file != null) {
                return e.file;
            }
            f = openPeerFile(e);
            e.file = f;
            return f;
        }
    }

    private OpenFile openPeerFile(Entry e) {
        Path p = e.path;
        if (!fileAllowed(p)) {
            throw new TransferException(ErrorCode.PERMISSION_DENIED, "nvmeof: segment '" + segment + "' publishes file " + p
                    + ", which is not under transports.nvmeof.peer_roots " + transport.peerRoots()
                    + "; this engine opens peers' files only there");
        }
        OpenFile f;
        try {
            f = transport.open(p, e.base, e.length);
        } catch (IOException ex) {
            throw new TransferException(ErrorCode.PEER_FAILED, "nvmeof: file " + p + " of segment '" + segment + "' cannot be opened: "
                    + ex.getMessage(), ex);
        }
        if (e.dev >= 0 && e.ino >= 0 && f.dev >= 0 && (f.dev != e.dev || f.ino != e.ino)) {
            f.close(0);
            throw new TransferException(ErrorCode.PEER_FAILED, "nvmeof: file " + p + " is not the file segment '" + segment
                    + "' registered (device/inode " + f.dev + "/" + f.ino + ", published " + e.dev + "/" + e.ino + "): replaced?");
        }
        return f;
    }

    @Override
    public void descriptorChanged(SegmentDescriptor descriptor) {
        if (own) {
            return;
        }
        Entry[] before = entries;
        Entry[] after = entries(descriptor, before);
        entries = after;
        for (Entry e : before) {
            boolean kept = false;
            for (Entry k : after) {
                kept |= k == e;
            }
            if (!kept && e.file != null) {
                e.file.close(0);
            }
        }
    }

    @Override
    public boolean isOpen() {
        return open && transport.isOpen();
    }

    @Override
    public void close() {
        open = false;
        if (!own) {
            for (Entry e : entries) {
                OpenFile f = e.file;
                if (f != null) {
                    f.close(0);
                }
            }
        }
    }
}
