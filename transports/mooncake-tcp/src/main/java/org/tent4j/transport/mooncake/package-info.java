/**
 * The {@code mooncake-tcp} transport: the classic Mooncake Transfer Engine TCP data protocol (24-byte header, v2
 * status frames with magic "MCTV"), as initiator and as target, so a tent4j engine and a Mooncake engine can read and
 * write each other's registered host memory. {@link org.tent4j.transport.mooncake.MooncakeSegmentDescriptor} and
 * {@link org.tent4j.transport.mooncake.MooncakeKeys} read and write Mooncake's metadata. docs/INTEROP.md says what
 * interoperates and how.
 */
package org.tent4j.transport.mooncake;
