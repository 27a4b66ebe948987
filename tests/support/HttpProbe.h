#pragma once
// A raw HTTP/1.1 client for tests of the status endpoint: sends exactly the bytes given (so a
// test can send malformed or oversized requests) to 127.0.0.1:port and reads the reply until
// the server closes or `timeout` seconds pass.
#include <map>
#include <string>

namespace dedloc::test {

struct HttpReply {
    int status = 0;                             // 0: no parsable reply
    std::map<std::string, std::string> headers; // names lower-cased
    std::string body;
    double seconds = 0.0; // from connect to the end of the reply
};

[[nodiscard]] HttpReply httpExchange(unsigned short port, const std::string &request, double timeout = 10.0);
// "GET <path> HTTP/1.1" with Host and Connection: close.
[[nodiscard]] HttpReply httpGet(unsigned short port, const std::string &path, double timeout = 10.0);

} // namespace dedloc::test
