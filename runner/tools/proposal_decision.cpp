#include "runner/tools/proposal_decision.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <memory>

#include "base/hex.h"
#include "base/unique_fd.h"
#include "policy/path_resolution.h"
#include "policy/safe_file.h"

namespace deskd::tools {

namespace {

Error refused(std::string what) { return Error::make(ErrorCode::refused, std::move(what)); }



}  // namespace

Result<std::string> file_base(const std::filesystem::path& path) {
  // O_NOFOLLOW: the path was resolved when it was checked; a link put there since is not
  // the file the proposal was made against.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) {
    if (errno == ENOENT) return std::string("absent");
    return Error::from_errno(errno, "open " + policy::printable_path(path.native()));
  }
  struct stat status {};
  if (::fstat(fd.get(), &status) != 0) return Error::from_errno(errno, "fstat " + path.native());
  if (!S_ISREG(status.st_mode)) {
    return refused(policy::printable_path(path.native()) + " is not a regular file.");
  }
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!context || EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr) != 1) {
    return Error::make(ErrorCode::internal, "SHA-256 is not available from OpenSSL.");
  }
  char buffer[65536];
  for (;;) {
    const ssize_t count = retry_on_eintr([&] { return ::read(fd.get(), buffer, sizeof buffer); });
    if (count < 0) return Error::from_errno(errno, "read " + path.native());
    if (count == 0) break;
    EVP_DigestUpdate(context.get(), buffer, static_cast<std::size_t>(count));
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned size = 0;
  EVP_DigestFinal_ex(context.get(), digest, &size);
  return "sha256:" + hex_encode(std::span<const unsigned char>(digest, size));
}


Result<Proposal> accept_proposal(ProposalStore& store, const policy::PathPolicy& policy, std::string_view id) {
  DESKD_ASSIGN_OR_RETURN(Proposal proposal, store.get(id));
  if (proposal.status != "open") {
    return refused("Proposal " + proposal.id + " is already " + proposal.status + ".");
  }
  auto allowed = policy.readable(proposal.path);
  if (!allowed.ok()) {
    return refused("Proposal " + proposal.id + " cannot be accepted: " + allowed.error().what);
  }
  if (allowed->native() != proposal.path) {
    return refused("Proposal " + proposal.id + " cannot be accepted: " + proposal.path +
                   " now resolves to " + allowed->native() + ".");
  }
  if (proposal.base.empty()) {
    return refused("Proposal " + proposal.id +
                   " was made by an older deskd that did not record the file it was made against; ask the desk "
                   "to propose it again.");
  }
  DESKD_ASSIGN_OR_RETURN(const std::string now, file_base(proposal.path));
  if (now != proposal.base) {
    return refused("Proposal " + proposal.id + " cannot be accepted: " + proposal.path +
                   (now == "absent" ? " was deleted" : " changed") +
                   " after the proposal was made. Nothing was written; reject it, or ask the desk to propose the "
                   "change again.");
  }
  const std::filesystem::path target(proposal.path);
  DESKD_RETURN_IF_ERROR(
      policy::SafeFile::write(target, proposal.content, policy::WriteMode::replace_durably, target.parent_path()));
  DESKD_RETURN_IF_ERROR(store.set_status(proposal.id, "accepted"));
  proposal.status = "accepted";
  return proposal;
}

Result<Proposal> reject_proposal(ProposalStore& store, std::string_view id) {
  DESKD_ASSIGN_OR_RETURN(Proposal proposal, store.get(id));
  if (proposal.status != "open") {
    return refused("Proposal " + proposal.id + " is already " + proposal.status + ".");
  }
  DESKD_RETURN_IF_ERROR(store.set_status(proposal.id, "rejected"));
  proposal.status = "rejected";
  return proposal;
}

}  // namespace deskd::tools
