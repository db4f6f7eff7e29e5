// main() of a fuzz target built without libFuzzer (any compiler; ctest Fuzz*Replay): every file
// of the seed corpus folders given on the command line, then `--mutations N` seeded mutations of
// them (byte flips, inserts, deletes, splices), through LLVMFuzzerTestOneInput. Include it last,
// after the target's LLVMFuzzerTestOneInput.
#pragma once

#ifndef LAZYLLM_LIBFUZZER

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    long mutations = 10000;
    std::vector<std::string> corpus;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--mutations") == 0 && i + 1 < argc) {
            mutations = std::strtol(argv[++i], nullptr, 10);
            continue;
        }
        std::error_code ec;
        std::vector<std::filesystem::path> files;
        if (std::filesystem::is_directory(argv[i], ec)) {
            for (const auto& e : std::filesystem::directory_iterator(argv[i]))
                files.push_back(e.path());
        } else {
            files.emplace_back(argv[i]);
        }
        for (const auto& f : files) {
            std::ifstream in(f, std::ios::binary);
            std::ostringstream ss;
            ss << in.rdbuf();
            corpus.push_back(ss.str());
        }
    }
    if (corpus.empty()) corpus.emplace_back();
    auto run = [](const std::string& s) {
        LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
    };
    for (const std::string& s : corpus) run(s);
    std::mt19937_64 rng(12345);
    for (long it = 0; it < mutations; ++it) {
        std::string s = corpus[rng() % corpus.size()];
        const int n_edits = 1 + static_cast<int>(rng() % 8);
        for (int k = 0; k < n_edits; ++k) {
            const size_t pos = s.empty() ? 0 : rng() % s.size();
            switch (rng() % 5) {
                case 0:
                    if (!s.empty()) s[pos] = static_cast<char>(rng());
                    break;
                case 1:
                    s.insert(s.begin() + static_cast<std::ptrdiff_t>(pos),
                             static_cast<char>(rng()));
                    break;
                case 2:
                    if (!s.empty()) s.erase(pos, 1 + rng() % 16);
                    break;
                case 3: {
                    const std::string& o = corpus[rng() % corpus.size()];
                    if (!o.empty()) s.insert(pos, o.substr(rng() % o.size(), 1 + rng() % 32));
                    break;
                }
                default:
                    if (!s.empty()) s[pos] ^= static_cast<char>(1u << (rng() % 8));
            }
        }
        run(s);
    }
    std::printf("%zu corpus inputs and %ld mutations: no failure\n", corpus.size(), mutations);
    return 0;
}

#endif  // LAZYLLM_LIBFUZZER
