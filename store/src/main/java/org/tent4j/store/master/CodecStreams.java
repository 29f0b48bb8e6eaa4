package org.tent4j.store.master;

import java.io.InputStream;
import java.io.OutputStream;
import java.util.Arrays;

/**
 * {@code ByteArrayOutputStream} and {@code ByteArrayInputStream} without their locks, under the master's
 * {@code DataOutputStream}s and {@code DataInputStream}s: every field of every command a log entry or a snapshot holds
 * is a write or a read, each a synchronized call on the JDK's streams. Log entries are encoded on the thread that
 * proposes them and decoded on each master's applier, and a snapshot is written and read while the applier waits.
 */
final class CodecStreams {
    private CodecStreams() {
    }

    /** Bytes written into a growing array. */
    static final class Out extends OutputStream {
        private byte[] buf;
        private int size;

        Out(int capacity) {
            buf = new byte[capacity];
        }

        private void room(int n) {
            if (size + n > buf.length) {
                // doubling, short of the largest array (a snapshot of many objects can pass a gigabyte)
                buf = Arrays.copyOf(buf, Math.max(size + n, (int) Math.min(Integer.MAX_VALUE - 8, 2L * buf.length)));
            }
        }

        @Override
        public void write(int b) {
            room(1);
            buf[size++] = (byte) b;
        }

        @Override
        public void write(byte[] b, int off, int len) {
            room(len);
            System.arraycopy(b, off, buf, size, len);
            size += len;
        }

        byte[] toByteArray() {
            return Arrays.copyOf(buf, size);
        }
    }

    /** Bytes read from an array. */
    static final class In extends InputStream {
        private final byte[] buf;
        private int pos;

        In(byte[] buf) {
            this.buf = buf;
        }

        @Override
        public int read() {
            return pos < buf.length ? buf[pos++] & 0xff : -1;
        }

        @Override
        public int read(byte[] b, int off, int len) {
            if (len == 0) {
                return 0;
            }
            int n = Math.min(len, buf.length - pos);
            if (n <= 0) {
                return -1;
            }
            System.arraycopy(buf, pos, b, off, n);
            pos += n;
            return n;
        }

        @Override
        public int available() {
            return buf.length - pos;
        }
    }
}
