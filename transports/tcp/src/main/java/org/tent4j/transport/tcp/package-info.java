/**
 * The {@code tcp} transport: one-sided READ and WRITE of registered host memory over persistent TCP connections, on
 * Netty (epoll, io_uring or NIO). It runs between any two engines that can reach each other, so it is the fallback
 * every engine has. The full specification, with examples, is {@code transports/tcp/PROTOCOL.md}.
 *
 * <h2>Connections</h2>
 * Every engine listens on a data port of its own ({@code transports.tcp.port}, 0 = any free port) and publishes it in
 * its segment descriptor as tcp attribute {@code port}, together with {@code max_frame}, the largest request it
 * accepts. An initiator opens {@code lanes} connections (TCP_NODELAY) to {@code descriptor.host():port} and keeps
 * them; each lane is a path of the runtime's scheduler. Multi-rail: an engine with several addresses
 * ({@code transports.tcp.interfaces}) listens on each at the same port and publishes them as attribute
 * {@code addresses}; an initiator tries every (local, remote) address pair on one subnet and keeps each that connects
 * as a rail with {@code lanes} lanes of its own.
 *
 * <h2>Frames (protocol version 1; every integer little-endian)</h2>
 * <pre>
 * request, 32 bytes                                    response, 16 bytes
 *  0  u32 magic   0x544A3454 = bytes "T4JT"             0  u32 magic      0x524A3454 = bytes "T4JR"
 *  4  u8  version 1                                     4  u32 status     0 = OK, else an error code
 *  5  u8  opcode  1 = READ, 2 = WRITE                   8  u64 request id (echoed)
 *  6  u16 flags   0 (no flags are defined)
 *  8  u64 request id (chosen by the initiator)
 * 16  u64 remote address (in the target's address space)
 * 24  u64 length  1 .. max_frame
 * </pre>
 * A WRITE request is followed by exactly {@code length} payload bytes. A READ answered OK is followed by exactly
 * {@code length} bytes. An error response is followed by {@code u32 n} and {@code n <= 1024} bytes of UTF-8 saying
 * what was wrong (segment, address, length, reason). Status codes: 1 INVALID_ARGUMENT, 2 ADDRESS_NOT_REGISTERED,
 * 3 OUT_OF_BOUNDS, 4 PERMISSION_DENIED, 5 PROTOCOL, 6 INTERNAL, 7 TOO_MANY_REQUESTS (reserved); an initiator reports
 * any other status as PEER_FAILED.
 *
 * <h2>Rules</h2>
 * <ul>
 * <li>Requests may be pipelined; the target answers every request, in the order received, on its connection.</li>
 * <li>The target checks every request against its registrations
 *     ({@link org.tent4j.spi.LocalMemory#checkRemoteAccess}) before touching memory. A request that fails the check
 *     gets an error response and the connection goes on; the payload of such a WRITE is read and dropped.</li>
 * <li>A WRITE is answered OK only once all its bytes are in the target's memory.</li>
 * <li>A protocol violation (bad magic, version, opcode or flags, length 0 or above {@code max_frame}, address +
 *     length past 2^64) is answered with status 5 (request id 0 if the header could not be read) and that connection
 *     is closed; other connections are not affected.</li>
 * <li>An initiator that gets no answer by a slice's deadline fails it with TIMEOUT and closes that lane, since a late
 *     answer would be taken for the next request's.</li>
 * </ul>
 *
 * <h2>Zero copy</h2>
 * Payload bytes move between sockets and registered memory without an intermediate buffer: sending writes Netty
 * views of the registered memory ({@code MemoryRegionBufs}), and receiving hands the socket
 * a view of the destination range as its read buffer ({@code LandingRecvAllocator}). Only
 * payload bytes that arrive in the same read as their header are copied, and READ answers of at most 16 KiB at the
 * initiator: those are read 64 KiB at a time and copied out, since a 4 KiB copy costs less than a read of its own.
 */
package org.tent4j.transport.tcp;
