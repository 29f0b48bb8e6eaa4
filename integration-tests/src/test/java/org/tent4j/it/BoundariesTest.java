package org.tent4j.it;

import static com.tngtech.archunit.base.DescribedPredicate.not;
import static com.tngtech.archunit.core.domain.JavaCall.Predicates.target;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.belongToAnyOf;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAnyPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.core.domain.properties.HasOwner.Predicates.With.owner;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.MemoryPath;
import org.tent4j.spi.OptionSpec;
import org.tent4j.spi.SecuritySettings;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.platform.DeviceInfo;
import org.tent4j.spi.platform.PointerInfo;

/**
 * The module boundaries of DESIGN.md, checked on the compiled classes of every module so they hold without anyone
 * remembering them: te-api depends on nothing, plugins only on te-api, the runtime never names a plugin, the store and
 * the integrations use only the public API.
 */
class BoundariesTest {
    private static final String PLATFORM_COMMON = "org.tent4j.platform.common..";
    private static final String[] PLATFORM_PLUGINS = {"org.tent4j.platform.cuda..", "org.tent4j.platform.rocm..",
            "org.tent4j.platform.ascend.."};
    /** The token handshake and TLS of Netty connections, shared by the runtime's control plane and the tcp transport. */
    private static final String NETTY_COMMON = "org.tent4j.transport.netty..";
    private static final String[] NETTY_COMMON_USERS = {"org.tent4j.runtime.control..", "org.tent4j.transport.tcp.."};
    private static final String[] PLUGINS = {"org.tent4j.transport..", "org.tent4j.platform..", "org.tent4j.metadata.."};
    private static JavaClasses classes;

    @BeforeAll
    static void importClasses() {
        classes = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("org.tent4j");
    }

    @Test
    void apiDependsOnTheJdkOnly() {
        noClasses().that().resideInAnyPackage("org.tent4j.api..", "org.tent4j.spi..")
                .should().dependOnClassesThat().resideOutsideOfPackages("java..", "org.tent4j.api..", "org.tent4j.spi..")
                .because("te-api depends on nothing but the JDK").check(classes);
    }

    @Test
    void spiValuesAreBuiltThroughTheirBuildersOrFactories() {
        noClasses().that().resideOutsideOfPackages("org.tent4j.spi..")
                .should().callConstructorWhere(target(owner(belongToAnyOf(SegmentDescriptor.class, BufferDescriptor.class,
                        SecuritySettings.class, OptionSpec.class, MemoryPath.class, DeviceInfo.class, PointerInfo.class))))
                .because("the canonical constructors of these SPI records are not part of the contract: a component "
                        + "added later changes them, while builder() and of(...) keep linking (issue 27)").check(classes);
    }

    @Test
    void apiDoesNotDependOnTheSpi() {
        noClasses().that().resideInAPackage("org.tent4j.api..")
                .should().dependOnClassesThat().resideInAnyPackage("org.tent4j.spi..")
                .because("applications compile against org.tent4j.api alone; the SPI builds on the API, never the reverse"
                        + " (no package cycle api <-> spi)").check(classes);
    }

    @Test
    void pluginsDependOnTheApiOnly() {
        noClasses().that().resideInAnyPackage(PLUGINS)
                .should().dependOnClassesThat().resideInAnyPackage("org.tent4j.runtime..", "org.tent4j.samples..",
                        "org.tent4j.cli..", "org.tent4j.store..", "org.tent4j.testkit..", "org.tent4j.integration..")
                .because("a plugin depends on te-api only").check(classes);
    }

    @Test
    void pluginsDoNotDependOnEachOther() {
        String[][] families = {
                {"org.tent4j.transport.tcp..", "tcp"}, {"org.tent4j.transport.shm..", "shm"}, {"org.tent4j.transport.rdma..", "rdma"},
                {"org.tent4j.transport.efa..", "efa"}, {"org.tent4j.transport.nvlink..", "nvlink"}, {"org.tent4j.transport.faulty..", "faulty"},
                {"org.tent4j.transport.nvmeof..", "nvmeof"}, {"org.tent4j.transport.mooncake..", "mooncake-tcp"},
                {"org.tent4j.platform.cuda..", "cuda"}, {"org.tent4j.platform.rocm..", "rocm"}, {"org.tent4j.platform.ascend..", "ascend"},
                {PLATFORM_COMMON, "platform-common"}, {NETTY_COMMON, "netty-common"},
                {"org.tent4j.metadata.etcd..", "etcd"}, {"org.tent4j.metadata.redis..", "redis"}, {"org.tent4j.metadata.http..", "http"}};
        for (String[] self : families) {
            for (String[] other : families) {
                // the platform plugins may use platform-common (checked by onlyPlatformPluginsDependOnPlatformCommon),
                // tcp may use netty-common (checked by onlyTheControlPlaneAndTcpDependOnNettyCommon)
                if (self != other && !(other[0].equals(PLATFORM_COMMON) && self[0].startsWith("org.tent4j.platform."))
                        && !(other[0].equals(NETTY_COMMON) && self[0].equals(NETTY_COMMON_USERS[1]))) {
                    noClasses().that().resideInAPackage(self[0]).should().dependOnClassesThat().resideInAPackage(other[0])
                            .because(self[1] + " must reach " + other[1] + " only through the SPI (ServiceLoader)")
                            .check(classes);
                }
            }
        }
    }

    @Test
    void platformCommonDependsOnTheApiOnly() {
        noClasses().that().resideInAPackage(PLATFORM_COMMON)
                .should().dependOnClassesThat().resideOutsideOfPackages("java..", "org.slf4j..", "org.tent4j.api..",
                        "org.tent4j.spi..", PLATFORM_COMMON)
                .because("platform-common is te-api plus what the native platforms share, like Netty's unix-common")
                .check(classes);
    }

    @Test
    void onlyPlatformPluginsDependOnPlatformCommon() {
        noClasses().that().resideOutsideOfPackages(PLATFORM_COMMON, PLATFORM_PLUGINS[0], PLATFORM_PLUGINS[1],
                        PLATFORM_PLUGINS[2])
                .should().dependOnClassesThat().resideInAPackage(PLATFORM_COMMON)
                .because("platform-common is the native platforms' shared base, not an API").check(classes);
    }

    @Test
    void theNativePlatformsShareTheirCommonCodeInsteadOfCopyingIt() {
        classes().that().haveSimpleName("CudaPlatform").or().haveSimpleName("RocmPlatform")
                .should().beAssignableTo("org.tent4j.platform.common.BlockIpcPlatform")
                .because("allocations, the block registry, IPC handles, streams and the switch-device guard of the"
                        + " block-and-handle runtimes live once, in platform-common").check(classes);
        classes().that().haveSimpleName("BlockIpcPlatform").or().haveSimpleName("AscendPlatform")
                .should().dependOnClassesThat().haveFullyQualifiedName("org.tent4j.platform.common.IpcMappings")
                .because("the reference-counted IPC cache lives once, in platform-common").check(classes);
        classes().that().haveSimpleName("BlockIpcPlatform")
                .should().dependOnClassesThat().haveFullyQualifiedName("org.tent4j.platform.common.CurrentDevice")
                .because("the switch-device guard lives once, in platform-common").check(classes);
        classes().that().haveSimpleName("CudaStream").or().haveSimpleName("RocmStream").or().haveSimpleName("AscendStream")
                .should().beAssignableTo("org.tent4j.platform.common.NativeStream")
                .because("stream state and argument checks live once, in platform-common").check(classes);
        classes().that().haveSimpleName("CudaRuntime").or().haveSimpleName("HipRuntime").or().haveSimpleName("AclRuntime")
                .should().beAssignableTo("org.tent4j.platform.common.NativeRuntime")
                .because("turning runtime status codes into errors lives once, in platform-common").check(classes);
    }

    @Test
    void nettyCommonDependsOnTheApiAndNettyOnly() {
        noClasses().that().resideInAPackage(NETTY_COMMON)
                .should().dependOnClassesThat().resideOutsideOfPackages("java..", "javax..", "jdk.net..", "io.netty..",
                        "org.slf4j..", "org.tent4j.api..", "org.tent4j.spi..", NETTY_COMMON)
                .because("netty-common is te-api plus the handshake, TLS and keep-alive that Netty connections share"
                        + " (jdk.net: the JDK's keep-alive socket options)")
                .check(classes);
    }

    @Test
    void onlyTheControlPlaneAndTcpDependOnNettyCommon() {
        noClasses().that().resideOutsideOfPackages(NETTY_COMMON, NETTY_COMMON_USERS[0], NETTY_COMMON_USERS[1])
                .should().dependOnClassesThat().resideInAPackage(NETTY_COMMON)
                .because("netty-common is the Netty connections' shared security code, not an API").check(classes);
    }

    @Test
    void theTokenHandshakeAndTlsLiveOnce() {
        classes().that().haveSimpleName("TokenAuthHandler").or().haveSimpleName("TlsContexts")
                .should().resideInAPackage(NETTY_COMMON)
                .because("security-critical code lives once, in netty-common, not copied per transport").check(classes);
    }

    /**
     * docs/SECURITY.md: among the transports only tcp has a port of its own (under the token and TLS); the others
     * exchange what they need through the control plane or the descriptor, so a socket there would bypass both.
     * mooncake-tcp is the one exception: it speaks Mooncake's wire, which has neither, and so refuses to start in an
     * engine with a token or TLS unless told to accept that (MooncakeEngineTest).
     */
    @Test
    void onlyTcpOpensSocketsAmongTheTransports() {
        noClasses().that().resideInAPackage("org.tent4j.transport..")
                .and().resideOutsideOfPackages("org.tent4j.transport.tcp..", NETTY_COMMON, "org.tent4j.transport.mooncake..")
                .should().dependOnClassesThat(resideInAPackage("io.netty..").or(
                        com.tngtech.archunit.core.domain.JavaClass.Predicates.belongToAnyOf(java.net.Socket.class,
                                java.net.ServerSocket.class, java.net.DatagramSocket.class,
                                java.nio.channels.SocketChannel.class, java.nio.channels.ServerSocketChannel.class,
                                java.nio.channels.DatagramChannel.class,
                                java.nio.channels.AsynchronousSocketChannel.class,
                                java.nio.channels.AsynchronousServerSocketChannel.class)))
                .because("a transport's own socket would bypass security.token and TLS (docs/SECURITY.md)")
                .check(classes);
    }

    @Test
    void runtimeNeverNamesAConcretePlugin() {
        noClasses().that().resideInAPackage("org.tent4j.runtime..")
                .should().dependOnClassesThat(resideInAnyPackage(PLUGINS).and(not(resideInAPackage(NETTY_COMMON))))
                .because("the runtime finds plugins through ServiceLoader (netty-common is no plugin; its users are"
                        + " checked by onlyTheControlPlaneAndTcpDependOnNettyCommon)").check(classes);
    }

    @Test
    void storeUsesOnlyThePublicApi() {
        noClasses().that().resideInAPackage("org.tent4j.store..")
                .should().dependOnClassesThat().resideInAnyPackage("org.tent4j.runtime..", "org.tent4j.spi..", "org.tent4j.transport..",
                        "org.tent4j.platform..", "org.tent4j.metadata..")
                .because("the store is a consumer of the public API like any other").check(classes);
    }

    @Test
    void integrationsUseOnlyThePublicApi() {
        noClasses().that().resideInAPackage("org.tent4j.integration..")
                .should().dependOnClassesThat().resideInAnyPackage("org.tent4j.runtime..", "org.tent4j.spi..", "org.tent4j.transport..",
                        "org.tent4j.platform..", "org.tent4j.metadata..")
                .because("integrations are consumers of the public API like any other").check(classes);
    }

    @Test
    void testkitUsesOnlyTheApiAndSpi() {
        noClasses().that().resideInAPackage("org.tent4j.testkit..")
                .should().dependOnClassesThat().resideInAnyPackage("org.tent4j.runtime..", "org.tent4j.transport..", "org.tent4j.samples..",
                        "org.tent4j.cli..")
                .because("the conformance kit is for any plugin vendor").check(classes);
    }

    @Test
    void nothingButTheCommandLineDependsOnIt() {
        noClasses().that().resideOutsideOfPackage("org.tent4j.cli..")
                .should().dependOnClassesThat().resideInAPackage("org.tent4j.cli..")
                .because("the libraries are used without the command line; it sits on top of them").check(classes);
    }

    @Test
    void theEngineCommandsUseOnlyTheApiAndTheDiscoverySpis() {
        noClasses().that().resideInAnyPackage("org.tent4j.cli..")
                .should().dependOnClassesThat().resideInAnyPackage("org.tent4j.runtime..", "org.tent4j.transport..",
                        "org.tent4j.platform..", "org.tent4j.testkit..")
                .because("a command is an application like any other: the runtime and the plugins are found at run time")
                .check(classes);
    }
}
