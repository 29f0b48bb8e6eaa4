package org.tent4j.transport.nvmeof;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.tent4j.testkit.nativecode.CProgram;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The hand-written io_uring, stat, open and mmap ABI of {@link IoUring} and {@link LinuxIo} against the installed
 * headers: gcc compiles a program printing every offset, size and constant the Java side uses, and the test compares.
 */
class LinuxAbiTest {
    @TempDir
    static Path dir;
    private static Map<String, String> c;

    @BeforeAll
    static void compile() throws Exception {
        assumeTrue(CProgram.gccAvailable(), "gcc is not installed");
        c = CProgram.run(dir, """
                #define _GNU_SOURCE
                #include <stdio.h>
                #include <stddef.h>
                #include <fcntl.h>
                #include <poll.h>
                #include <sys/stat.h>
                #include <sys/mman.h>
                #include <sys/eventfd.h>
                #include <sys/syscall.h>
                #include <linux/io_uring.h>
                #define P(name, v) printf("%s=%ld\\n", name, (long)(v))
                int main(void) {
                    P("params.size", sizeof(struct io_uring_params));
                    P("params.sq_entries", offsetof(struct io_uring_params, sq_entries));
                    P("params.cq_entries", offsetof(struct io_uring_params, cq_entries));
                    P("params.flags", offsetof(struct io_uring_params, flags));
                    P("params.features", offsetof(struct io_uring_params, features));
                    P("params.sq_off", offsetof(struct io_uring_params, sq_off));
                    P("params.cq_off", offsetof(struct io_uring_params, cq_off));
                    P("sq.head", offsetof(struct io_sqring_offsets, head));
                    P("sq.tail", offsetof(struct io_sqring_offsets, tail));
                    P("sq.ring_mask", offsetof(struct io_sqring_offsets, ring_mask));
                    P("sq.ring_entries", offsetof(struct io_sqring_offsets, ring_entries));
                    P("sq.flags", offsetof(struct io_sqring_offsets, flags));
                    P("sq.array", offsetof(struct io_sqring_offsets, array));
                    P("cq.head", offsetof(struct io_cqring_offsets, head));
                    P("cq.tail", offsetof(struct io_cqring_offsets, tail));
                    P("cq.ring_mask", offsetof(struct io_cqring_offsets, ring_mask));
                    P("cq.ring_entries", offsetof(struct io_cqring_offsets, ring_entries));
                    P("cq.overflow", offsetof(struct io_cqring_offsets, overflow));
                    P("cq.cqes", offsetof(struct io_cqring_offsets, cqes));
                    P("sqe.size", sizeof(struct io_uring_sqe));
                    P("sqe.opcode", offsetof(struct io_uring_sqe, opcode));
                    P("sqe.flags", offsetof(struct io_uring_sqe, flags));
                    P("sqe.ioprio", offsetof(struct io_uring_sqe, ioprio));
                    P("sqe.fd", offsetof(struct io_uring_sqe, fd));
                    P("sqe.off", offsetof(struct io_uring_sqe, off));
                    P("sqe.addr", offsetof(struct io_uring_sqe, addr));
                    P("sqe.len", offsetof(struct io_uring_sqe, len));
                    P("sqe.rw_flags", offsetof(struct io_uring_sqe, rw_flags));
                    P("sqe.poll32_events", offsetof(struct io_uring_sqe, poll32_events));
                    P("sqe.user_data", offsetof(struct io_uring_sqe, user_data));
                    P("cqe.size", sizeof(struct io_uring_cqe));
                    P("cqe.user_data", offsetof(struct io_uring_cqe, user_data));
                    P("cqe.res", offsetof(struct io_uring_cqe, res));
                    P("cqe.flags", offsetof(struct io_uring_cqe, flags));
                    P("IORING_OP_NOP", IORING_OP_NOP);
                    P("IORING_OP_POLL_ADD", IORING_OP_POLL_ADD);
                    P("IORING_OP_READ", IORING_OP_READ);
                    P("IORING_OP_WRITE", IORING_OP_WRITE);
                    P("IORING_ENTER_GETEVENTS", IORING_ENTER_GETEVENTS);
                    P("IORING_FEAT_SINGLE_MMAP", IORING_FEAT_SINGLE_MMAP);
                    P("IORING_FEAT_RW_CUR_POS", IORING_FEAT_RW_CUR_POS);
                    P("IORING_OFF_SQ_RING", IORING_OFF_SQ_RING);
                    P("IORING_OFF_CQ_RING", IORING_OFF_CQ_RING);
                    P("IORING_OFF_SQES", IORING_OFF_SQES);
                    P("SYS_io_uring_setup", SYS_io_uring_setup);
                    P("SYS_io_uring_enter", SYS_io_uring_enter);
                    P("POLLIN", POLLIN);
                    P("O_RDONLY", O_RDONLY);
                    P("O_RDWR", O_RDWR);
                    P("O_CLOEXEC", O_CLOEXEC);
                    P("O_DIRECT", O_DIRECT);
                    P("EFD_CLOEXEC", EFD_CLOEXEC);
                    P("EFD_NONBLOCK", EFD_NONBLOCK);
                    P("PROT_READ", PROT_READ);
                    P("PROT_WRITE", PROT_WRITE);
                    P("MAP_SHARED", MAP_SHARED);
                    P("MAP_POPULATE", MAP_POPULATE);
                    P("stat.size", sizeof(struct stat));
                    P("stat.st_dev", offsetof(struct stat, st_dev));
                    P("stat.st_ino", offsetof(struct stat, st_ino));
                    P("stat.st_nlink", offsetof(struct stat, st_nlink));
                    P("stat.st_nlink.size", sizeof(((struct stat *)0)->st_nlink));
                    P("stat.st_mode", offsetof(struct stat, st_mode));
                    P("stat.st_size", offsetof(struct stat, st_size));
                    return 0;
                }
                """, List.of());
    }

    private static void check(Map<String, Long> expected) {
        Map<String, Long> actual = new LinkedHashMap<>();
        for (String k : expected.keySet()) {
            actual.put(k, c.containsKey(k) ? Long.parseLong(c.get(k)) : null);
        }
        assertEquals(expected, actual);
    }

    @Test
    void ioUringStructsMatchTheHeader() {
        Map<String, Long> m = new LinkedHashMap<>();
        m.put("params.size", IoUring.PARAMS_SIZE);
        m.put("params.sq_entries", IoUring.P_SQ_ENTRIES);
        m.put("params.cq_entries", IoUring.P_CQ_ENTRIES);
        m.put("params.flags", IoUring.P_FLAGS);
        m.put("params.features", IoUring.P_FEATURES);
        m.put("params.sq_off", IoUring.P_SQ_OFF);
        m.put("params.cq_off", IoUring.P_CQ_OFF);
        m.put("sq.head", IoUring.SQO_HEAD);
        m.put("sq.tail", IoUring.SQO_TAIL);
        m.put("sq.ring_mask", IoUring.SQO_RING_MASK);
        m.put("sq.ring_entries", IoUring.SQO_RING_ENTRIES);
        m.put("sq.flags", IoUring.SQO_FLAGS);
        m.put("sq.array", IoUring.SQO_ARRAY);
        m.put("cq.head", IoUring.CQO_HEAD);
        m.put("cq.tail", IoUring.CQO_TAIL);
        m.put("cq.ring_mask", IoUring.CQO_RING_MASK);
        m.put("cq.ring_entries", IoUring.CQO_RING_ENTRIES);
        m.put("cq.overflow", IoUring.CQO_OVERFLOW);
        m.put("cq.cqes", IoUring.CQO_CQES);
        m.put("sqe.size", IoUring.SQE_SIZE);
        m.put("sqe.opcode", IoUring.SQE_OPCODE);
        m.put("sqe.flags", IoUring.SQE_FLAGS);
        m.put("sqe.ioprio", IoUring.SQE_IOPRIO);
        m.put("sqe.fd", IoUring.SQE_FD);
        m.put("sqe.off", IoUring.SQE_OFF);
        m.put("sqe.addr", IoUring.SQE_ADDR);
        m.put("sqe.len", IoUring.SQE_LEN);
        m.put("sqe.rw_flags", IoUring.SQE_RW_FLAGS);
        m.put("sqe.poll32_events", IoUring.SQE_RW_FLAGS);
        m.put("sqe.user_data", IoUring.SQE_USER_DATA);
        m.put("cqe.size", IoUring.CQE_SIZE);
        m.put("cqe.user_data", IoUring.CQE_USER_DATA);
        m.put("cqe.res", IoUring.CQE_RES);
        m.put("cqe.flags", IoUring.CQE_FLAGS);
        check(m);
    }

    @Test
    void constantsMatchTheHeaders() {
        Map<String, Long> m = new LinkedHashMap<>();
        m.put("IORING_OP_NOP", (long) IoUring.IORING_OP_NOP);
        m.put("IORING_OP_POLL_ADD", (long) IoUring.IORING_OP_POLL_ADD);
        m.put("IORING_OP_READ", (long) IoUring.IORING_OP_READ);
        m.put("IORING_OP_WRITE", (long) IoUring.IORING_OP_WRITE);
        m.put("IORING_ENTER_GETEVENTS", (long) IoUring.IORING_ENTER_GETEVENTS);
        m.put("IORING_FEAT_SINGLE_MMAP", (long) IoUring.IORING_FEAT_SINGLE_MMAP);
        m.put("IORING_FEAT_RW_CUR_POS", (long) IoUring.IORING_FEAT_RW_CUR_POS);
        m.put("IORING_OFF_SQ_RING", IoUring.IORING_OFF_SQ_RING);
        m.put("IORING_OFF_CQ_RING", IoUring.IORING_OFF_CQ_RING);
        m.put("IORING_OFF_SQES", IoUring.IORING_OFF_SQES);
        m.put("SYS_io_uring_setup", LinuxIo.SYS_IO_URING_SETUP);
        m.put("SYS_io_uring_enter", LinuxIo.SYS_IO_URING_ENTER);
        m.put("POLLIN", (long) IoUring.POLLIN);
        m.put("O_RDONLY", (long) LinuxIo.O_RDONLY);
        m.put("O_RDWR", (long) LinuxIo.O_RDWR);
        m.put("O_CLOEXEC", (long) LinuxIo.O_CLOEXEC);
        m.put("O_DIRECT", (long) LinuxIo.O_DIRECT);
        m.put("EFD_CLOEXEC", (long) LinuxIo.EFD_CLOEXEC);
        m.put("EFD_NONBLOCK", (long) LinuxIo.EFD_NONBLOCK);
        m.put("PROT_READ", (long) LinuxIo.PROT_READ);
        m.put("PROT_WRITE", (long) LinuxIo.PROT_WRITE);
        m.put("MAP_SHARED", (long) LinuxIo.MAP_SHARED);
        m.put("MAP_POPULATE", (long) LinuxIo.MAP_POPULATE);
        check(m);
    }

    @Test
    void statLayoutMatchesTheHeader() {
        Map<String, Long> m = new LinkedHashMap<>();
        m.put("stat.size", LinuxIo.STAT_SIZE);
        m.put("stat.st_dev", LinuxIo.STAT_DEV);
        m.put("stat.st_ino", LinuxIo.STAT_INO);
        m.put("stat.st_nlink", LinuxIo.STAT_NLINK);
        m.put("stat.st_nlink.size", LinuxIo.AARCH64 ? 4L : 8L);
        m.put("stat.st_mode", LinuxIo.STAT_MODE);
        m.put("stat.st_size", LinuxIo.STAT_SIZE_FIELD);
        check(m);
    }
}
