/**
 * A NIXL-style agent over the public tent4j API ({@code te-api} only): {@link org.tent4j.integration.nixl.Agent} is the
 * north-bound API, {@link org.tent4j.integration.nixl.spi} the backend contract, found with
 * {@link java.util.ServiceLoader} ({@code tent4j} and {@code local-copy} ship here).
 *
 * <p>The {@code tent4j} backend takes DRAM, VRAM, FILE and BLK. A FILE or BLK descriptor is NIXL's: {@code devId} an
 * open file descriptor of this process, {@code address} an offset in the file (see {@link org.tent4j.integration.nixl.MemoryType#FILE});
 * a file is only ever the target of a transfer, on a peer or, in loopback, on this agent:
 * <pre>{@code
 * agent.registerMem(DescriptorList.of(MemoryType.FILE, new Descriptor(0, fileSize, fd)));   // on the file's owner
 * peer.createXferReq(Opcode.WRITE, DescriptorList.dram(buf), DescriptorList.of(MemoryType.FILE,
 *         new Descriptor(offset, buf.byteSize(), fd)), "owner", XferOptions.NONE);          // fd is the owner's
 * }</pre>
 *
 * <pre>{@code
 * try (Agent agent = Agent.create(AgentConfig.of("decode-0", EngineConfig.builder().set("metadata.uri", "etcd://10.0.0.5:2379").build()))) {
 *     agent.createBackend("tent4j", Map.of());                 // describeBackend("tent4j") lists the options first
 *     agent.registerMem(DescriptorList.dram(kvCache));
 *     agent.sendLocalMD();                                     // or peers fetch it from agent.listenAddress()
 *     agent.fetchRemoteMD("prefill-0", Agent.FULL, Duration.ofSeconds(5));
 *     PreparedList mine = agent.prepXferDlist("", DescriptorList.blocks(MemoryType.DRAM, kvCache.address(), 16 << 10, 512, 0));
 *     PreparedList theirs = agent.prepXferDlist("prefill-0", remoteBlocks);
 *     try (XferRequest r = agent.makeXferReq(Opcode.READ, mine, new int[]{0, 1, 2}, theirs, new int[]{7, 8, 9},
 *             XferOptions.notify("layer 3".getBytes(UTF_8)))) {
 *         r.post();
 *         r.await(Duration.ofSeconds(10));                     // or poll r.status()
 *     }
 * }
 * }</pre>
 */
package org.tent4j.integration.nixl;
