package org.tent4j.transport.rdma;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.PaddingLayout;
import java.lang.foreign.StructLayout;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Checks the hand-written ABI in {@link Verbs} against the installed {@code <infiniband/verbs.h>}: gcc compiles a
 * program printing {@code offsetof}/{@code sizeof} of every named field of every modelled struct, every
 * {@code IBV_*} constant, and byte images of the {@code ibv_qp_attr}s and {@code ibv_send_wr} this transport builds,
 * and the test compares them with what the Java side computes and writes.
 */
class VerbsAbiTest {
    private static final byte[] GID = HexFormat.of().parseHex("fe800000000000000002c90300a1b2c3");

    @TempDir
    static Path dir;
    private static Map<String, String> c;
    private static final Map<String, Long> javaOffsets = new LinkedHashMap<>();
    private static final Map<String, Long> javaSizes = new LinkedHashMap<>();
    private static final Map<String, Long> javaConstants = new LinkedHashMap<>();

    @BeforeAll
    static void compile() throws Exception {
        CProgram.assumeToolchain();
        StringBuilder src = new StringBuilder("""
                #include <stdio.h>
                #include <stddef.h>
                #include <string.h>
                #include <stdint.h>
                #include <pthread.h>
                #include <infiniband/verbs.h>
                static void dump(const char *key, const void *p, size_t n) {
                    printf("%s ", key);
                    for (size_t i = 0; i < n; i++) printf("%02x", ((const unsigned char *)p)[i]);
                    printf("\\n");
                }
                int main(void) {
                """);
        for (Verbs.AbiType t : Verbs.abiTypes()) {
            Map<String, Long> fields = new LinkedHashMap<>();
            walk(t.layout(), "", 0, fields);
            assertTrue(fields.size() > 0, t.cType());
            for (Map.Entry<String, Long> f : fields.entrySet()) {
                String key = t.cType() + "." + f.getKey();
                if (t.anchor() == null) {
                    javaOffsets.put(key, f.getValue());
                    src.append("printf(\"%s %ld\\n\", \"").append(key).append("\", (long)offsetof(").append(t.cType())
                            .append(", ").append(f.getKey()).append("));\n");
                } else {
                    javaOffsets.put(key, fields.get(t.anchor()) - f.getValue());
                    src.append("printf(\"%s %ld\\n\", \"").append(key).append("\", (long)offsetof(").append(t.cType())
                            .append(", ").append(t.anchor()).append(") - (long)offsetof(").append(t.cType())
                            .append(", ").append(f.getKey()).append("));\n");
                }
            }
            if (t.anchor() == null) {
                javaSizes.put(t.cType(), t.layout().byteSize());
                src.append("printf(\"%s %ld\\n\", \"sizeof ").append(t.cType()).append("\", (long)sizeof(")
                        .append(t.cType()).append("));\n");
            }
        }
        for (Field f : Verbs.class.getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers()) && f.getType() == int.class && f.getName().startsWith("IBV_")) {
                f.setAccessible(true);
                javaConstants.put(f.getName(), (long) f.getInt(null));
                src.append("printf(\"%s %ld\\n\", \"").append(f.getName()).append("\", (long)(")
                        .append(f.getName()).append("));\n");
            }
        }
        for (String name : Verbs.WC_STATUS_NAMES) {
            src.append("printf(\"%s %ld\\n\", \"status ").append(name).append("\", (long)(").append(name)
                    .append("));\n");
        }
        src.append("""
                printf("pthread_mutex_t %ld\\n", (long)sizeof(pthread_mutex_t));
                printf("pthread_cond_t %ld\\n", (long)sizeof(pthread_cond_t));
                printf("verbs_context_from_query_port %ld\\n",
                       (long)(sizeof(struct verbs_context) - offsetof(struct verbs_context, query_port)));
                printf("abi_is_extended %ld\\n", (long)(intptr_t)__VERBS_ABI_IS_EXTENDED);
                uint8_t gid[16] = {0xfe,0x80,0,0,0,0,0,0,0x00,0x02,0xc9,0x03,0x00,0xa1,0xb2,0xc3};
                struct ibv_qp_attr a;
                memset(&a, 0, sizeof a);
                a.qp_state = IBV_QPS_INIT; a.pkey_index = 0; a.port_num = 1;
                a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE
                                    | IBV_ACCESS_REMOTE_ATOMIC;
                dump("init", &a, sizeof a);
                memset(&a, 0, sizeof a);
                a.qp_state = IBV_QPS_RTR; a.path_mtu = IBV_MTU_1024; a.dest_qp_num = 0xabcdef; a.rq_psn = 0x123456;
                a.max_dest_rd_atomic = 16; a.min_rnr_timer = 12;
                a.ah_attr.is_global = 1; memcpy(a.ah_attr.grh.dgid.raw, gid, 16); a.ah_attr.grh.sgid_index = 3;
                a.ah_attr.grh.hop_limit = 16; a.ah_attr.grh.traffic_class = 106; a.ah_attr.dlid = 0x1234;
                a.ah_attr.sl = 5; a.ah_attr.src_path_bits = 0; a.ah_attr.port_num = 1;
                dump("rtr", &a, sizeof a);
                memset(&a, 0, sizeof a);
                a.qp_state = IBV_QPS_RTS; a.sq_psn = 0x654321; a.timeout = 14; a.retry_cnt = 7; a.rnr_retry = 7;
                a.max_rd_atomic = 16;
                dump("rts", &a, sizeof a);
                memset(&a, 0, sizeof a);
                a.qp_state = IBV_QPS_ERR;
                dump("err", &a, sizeof a);
                struct ibv_send_wr w;
                memset(&w, 0, sizeof w);
                w.wr_id = 0x0000000700000005ULL; w.next = NULL; w.sg_list = NULL; w.num_sge = 1;
                w.opcode = IBV_WR_RDMA_READ; w.send_flags = IBV_SEND_SIGNALED;
                w.wr.rdma.remote_addr = 0x7f0000001000ULL; w.wr.rdma.rkey = 0x89abcdef;
                dump("send_wr", &w, sizeof w);
                struct ibv_sge s = { .addr = 0x7e0000002000ULL, .length = 65536, .lkey = 0x1234567 };
                dump("sge", &s, sizeof s);
                printf("sg_list_offset %ld\\n", (long)offsetof(struct ibv_send_wr, sg_list));
                return 0;
                }
                """);
        c = CProgram.run(dir, src.toString());
    }

    /** Named leaf and group members with their offsets; anonymous unions are transparent, as in C. */
    private static void walk(GroupLayout group, String prefix, long base, Map<String, Long> out) {
        long offset = base;
        for (MemoryLayout m : group.memberLayouts()) {
            long at = group instanceof StructLayout ? offset : base;
            if (!(m instanceof PaddingLayout)) {
                if (m.name().isEmpty()) {
                    if (m instanceof GroupLayout g) {
                        walk(g, prefix, at, out);
                    }
                } else if (!m.name().get().startsWith("(")) {
                    String path = prefix.isEmpty() ? m.name().get() : prefix + "." + m.name().get();
                    out.put(path, at);
                    if (m instanceof GroupLayout g) {
                        walk(g, path, at, out);
                    }
                }
            }
            if (group instanceof StructLayout) {
                offset += m.byteSize();
            }
        }
    }

    @Test
    void everyFieldOffsetMatchesTheHeader() {
        List<String> wrong = new ArrayList<>();
        javaOffsets.forEach((k, v) -> {
            String cv = c.get(k);
            if (cv == null || Long.parseLong(cv) != v) {
                wrong.add(k + ": java " + v + ", C " + cv);
            }
        });
        assertEquals(List.of(), wrong);
        assertTrue(javaOffsets.size() > 250, "checked " + javaOffsets.size() + " fields");
    }

    @Test
    void everyStructSizeMatchesTheHeader() {
        javaSizes.forEach((k, v) -> assertEquals(Long.parseLong(c.get("sizeof " + k)), v, "sizeof " + k));
        assertEquals(19, javaSizes.size(), "every type but the partly modelled verbs_context");
    }

    @Test
    void everyConstantMatchesTheHeader() {
        javaConstants.forEach((k, v) -> assertEquals(Long.parseLong(c.get(k)), v, k));
        assertTrue(javaConstants.size() > 80, "checked " + javaConstants.size() + " constants");
        for (int i = 0; i < Verbs.WC_STATUS_NAMES.size(); i++) {
            assertEquals(i, Long.parseLong(c.get("status " + Verbs.WC_STATUS_NAMES.get(i))),
                    Verbs.WC_STATUS_NAMES.get(i));
        }
    }

    @Test
    void contextAbiFactsMatchTheHeader() {
        assertEquals(Long.parseLong(c.get("pthread_mutex_t")), Verbs.PTHREAD_MUTEX_SIZE);
        assertEquals(Long.parseLong(c.get("pthread_cond_t")), Verbs.PTHREAD_COND_SIZE);
        assertEquals(Long.parseLong(c.get("verbs_context_from_query_port")),
                Verbs.VERBS_CONTEXT_SIZE_FROM_QUERY_PORT);
        assertEquals(Long.parseLong(c.get("abi_is_extended")), Verbs.VERBS_ABI_IS_EXTENDED);
    }

    private static QpTransitions.PathSettings path() {
        return new QpTransitions.PathSettings(1, 3, 5, 106, 14, 7, 7, 16, 16);
    }

    private static String image(QpTransitions.QpModify m) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment attr = a.allocate(Verbs.IBV_QP_ATTR);
            attr.fill((byte) 0x5A); // writeTo must clear what it does not set
            m.writeTo(attr);
            return HexFormat.of().formatHex(attr.toArray(JAVA_BYTE));
        }
    }

    @Test
    void qpAttrImagesAreByteIdenticalToC() {
        assertEquals(c.get("init"), image(QpTransitions.init(path())));
        assertEquals(c.get("rtr"), image(QpTransitions.readyToReceive(path(), Verbs.IBV_MTU_2048,
                new QpTransitions.RemoteQp(0xabcdef, 0x123456, 0x1234, Verbs.IBV_MTU_1024, GID))));
        assertEquals(c.get("rts"), image(QpTransitions.readyToSend(path(), 0x654321)));
        assertEquals(c.get("err"), image(QpTransitions.error()));
    }

    @Test
    void workRequestImageIsByteIdenticalToC() {
        try (WorkRequests requests = new WorkRequests(8)) {
            MemorySegment wr = requests.fill(5, 0x0000000700000005L, Verbs.IBV_WR_RDMA_READ, 0x7e0000002000L, 65536,
                    0x1234567, 0x7f0000001000L, 0x89abcdef);
            long sgList = Long.parseLong(c.get("sg_list_offset"));
            assertEquals(requests.scatterGather(5).address(), wr.get(ADDRESS, sgList).address(),
                    "sg_list points at the slot's own sge");
            byte[] bytes = wr.toArray(JAVA_BYTE);
            java.util.Arrays.fill(bytes, (int) sgList, (int) sgList + 8, (byte) 0);
            assertEquals(c.get("send_wr"), HexFormat.of().formatHex(bytes));
            assertEquals(c.get("sge"), HexFormat.of().formatHex(requests.scatterGather(5).toArray(JAVA_BYTE)));
        }
    }
}
