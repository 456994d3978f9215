package io.sparkext.shims

import java.net.{SocketAddress, StandardProtocolFamily, UnixDomainSocketAddress}
import java.nio.channels.SocketChannel

/** Unix domain sockets (Java 16+): the 4.x jars target Java 17. */
private[sparkext] object NetShim {
  def unixAddress(path: String): SocketAddress = UnixDomainSocketAddress.of(path)
  def isUnix(address: SocketAddress): Boolean = address.isInstanceOf[UnixDomainSocketAddress]
  def open(unix: Boolean): SocketChannel =
    if (unix) SocketChannel.open(StandardProtocolFamily.UNIX) else SocketChannel.open()
}
