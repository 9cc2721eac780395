// SPDX-License-Identifier: BSD-3-Clause
// The DOCA backend's call sequences, against link-time FAKES of the DOCA calls (doca_fakes.cc;
// no DOCA here): creation order, a thread/completion/async-ops/notification set per kernel,
// export before import, teardown in reverse, and every call failing once leaving nothing
// half-made with an error naming it.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "doca_fakes.h"
#include "dpumesh/doca/dpa_runtime.h"

using namespace dpumesh;
namespace fk = dpumesh::doca_fake;

namespace {

void tx_entry(uint64_t) {}
void rx_entry(uint64_t) {}

doca_dev *const dev = reinterpret_cast<doca_dev *>(0x1);
doca_dpa_app *const app = reinterpret_cast<doca_dpa_app *>(0x2);

const std::vector<doca::kernel_spec> kernels = {{"tx", &tx_entry}, {"rx", &rx_entry}};

const std::vector<std::string> per_kernel = {
	"doca_dpa_mem_alloc",
	"doca_dpa_thread_create",
	"doca_dpa_thread_set_func_arg",
	"doca_dpa_thread_start",
	"doca_dpa_completion_create",
	"doca_dpa_completion_set_thread",
	"doca_dpa_completion_start",
	"doca_dpa_completion_get_dpa_handle",
	"doca_dpa_async_ops_create",
	"doca_dpa_async_ops_attach",
	"doca_dpa_async_ops_start",
	"doca_dpa_async_ops_get_dpa_handle",
	"doca_dpa_notification_completion_create",
	"doca_dpa_notification_completion_start",
	"doca_dpa_notification_completion_get_dpa_handle",
	"doca_dpa_h2d_memcpy",
	"doca_dpa_thread_run",
};

std::vector<std::string> expected_creation()
{
	std::vector<std::string> v = {"doca_dpa_create", "doca_dpa_set_app", "doca_dpa_start",
				      "doca_dpa_mem_alloc", "doca_dpa_h2d_memcpy"};
	for (size_t k = 0; k < kernels.size(); k++)
		v.insert(v.end(), per_kernel.begin(), per_kernel.end());
	return v;
}

const std::vector<std::string> per_kernel_teardown = {
	"doca_dpa_notification_completion_stop", "doca_dpa_notification_completion_destroy",
	"doca_dpa_async_ops_stop", "doca_dpa_async_ops_destroy",
	"doca_dpa_completion_stop", "doca_dpa_completion_destroy",
	"doca_dpa_thread_stop", "doca_dpa_thread_destroy", "doca_dpa_mem_free",
};

void expect_nothing_left(const std::string &ctx)
{
	EXPECT_EQ(fk::fake().live_objects, 0) << ctx;
	EXPECT_EQ(fk::fake().started, 0) << ctx;
	EXPECT_EQ(fk::fake().allocations, 0) << ctx;
	EXPECT_TRUE(fk::fake().misuse.empty()) << ctx << ": " << fk::fake().misuse.front();
}

TEST(DocaSequence, CreationOrderAndASetPerKernel)
{
	fk::reset();
	auto rt = doca::dpa_runtime::create(dev, app, kernels, {});
	ASSERT_TRUE(rt) << rt.error().message();
	EXPECT_EQ(fk::fake().calls, expected_creation());
	/* per kernel: a thread, a completion, async ops, a notification; plus the DPA */
	EXPECT_EQ(fk::fake().live_objects, 1 + 4 * 2);
	EXPECT_EQ(fk::fake().allocations, 1 + 2); /* table + one argument block each */
	EXPECT_TRUE(fk::fake().misuse.empty());
	for (unsigned k = 0; k < 2; k++) {
		EXPECT_NE((*rt)->args(k).async_ops, 0u);
		EXPECT_NE((*rt)->args(k).completion, 0u);
		EXPECT_NE((*rt)->args(k).notification, 0u);
	}
	EXPECT_NE((*rt)->args(0).async_ops, (*rt)->args(1).async_ops);
	EXPECT_NE((*rt)->args(0).completion, (*rt)->args(1).completion);
	EXPECT_EQ((*rt)->args(0).table, (*rt)->args(1).table);
}

TEST(DocaSequence, TeardownIsTheReverseOfCreation)
{
	fk::reset();
	auto rt = doca::dpa_runtime::create(dev, app, kernels, {});
	ASSERT_TRUE(rt) << rt.error().message();
	ASSERT_TRUE((*rt)->request_stop().is_ok());
	const size_t made = fk::fake().calls.size();
	rt->reset();
	std::vector<std::string> teardown(fk::fake().calls.begin() + made, fk::fake().calls.end());
	std::vector<std::string> want;
	for (size_t k = 0; k < kernels.size(); k++)
		want.insert(want.end(), per_kernel_teardown.begin(), per_kernel_teardown.end());
	want.insert(want.end(), {"doca_dpa_mem_free", "doca_dpa_stop", "doca_dpa_destroy"});
	EXPECT_EQ(teardown, want);
	expect_nothing_left("teardown");
}

TEST(DocaSequence, EveryCallFailingOnceLeavesNothingHalfMade)
{
	const std::vector<std::string> seq = expected_creation();
	for (size_t i = 0; i < seq.size(); i++) {
		fk::reset();
		fk::fake().fail_index = static_cast<long>(i);
		auto rt = doca::dpa_runtime::create(dev, app, kernels, {});
		const std::string ctx = "call " + std::to_string(i) + " (" + seq[i] + ") failing";
		ASSERT_FALSE(rt) << ctx;
		EXPECT_NE(rt.error().message().find(seq[i]), std::string::npos)
			<< ctx << ": " << rt.error().message();
		EXPECT_NE(rt.error().message().find("failure injected"), std::string::npos) << ctx;
		if (i >= 5) { /* a kernel's call: the error says which kernel */
			const char *which = i < 5 + per_kernel.size() ? "kernel tx" : "kernel rx";
			EXPECT_NE(rt.error().message().find(which), std::string::npos)
				<< ctx << ": " << rt.error().message();
		}
		expect_nothing_left(ctx);
	}
}

TEST(DocaSequence, PodMemoryExportBeforeImport)
{
	fk::reset();
	std::vector<uint8_t> pod(1 << 16);
	auto x = doca::pod_export::create(dev, pod.data(), pod.size());
	ASSERT_TRUE(x) << x.error().message();
	auto m = doca::pod_import::create(dev, (*x)->descriptor());
	ASSERT_TRUE(m) << m.error().message();
	EXPECT_NE((*m)->handle(), 0u);
	const auto &c = fk::fake().calls;
	auto exp = std::find(c.begin(), c.end(), "doca_mmap_export_pci");
	auto imp = std::find(c.begin(), c.end(), "doca_mmap_create_from_export");
	ASSERT_NE(exp, c.end());
	ASSERT_NE(imp, c.end());
	EXPECT_LT(exp, imp);
	EXPECT_EQ(std::vector<std::string>(c.begin(), exp + 1),
		  (std::vector<std::string>{"doca_mmap_create", "doca_mmap_set_memrange",
					    "doca_mmap_add_dev", "doca_mmap_set_permissions",
					    "doca_mmap_start", "doca_mmap_export_pci"}));
	m->reset();
	x->reset();
	expect_nothing_left("export + import");

	/* a descriptor nobody exported (or whose exporter is gone) is refused */
	fk::reset();
	const uint8_t junk[16] = {1, 2, 3};
	auto bad = doca::pod_import::create(dev, junk);
	ASSERT_FALSE(bad);
	EXPECT_NE(bad.error().message().find("doca_mmap_create_from_export"), std::string::npos);
	expect_nothing_left("import of an unknown descriptor");
}

TEST(DocaSequence, ExportAndImportCallsFailingOnceLeaveNothing)
{
	std::vector<uint8_t> pod(4096);
	for (long i = 0; i < 6; i++) {
		fk::reset();
		fk::fake().fail_index = i;
		auto x = doca::pod_export::create(dev, pod.data(), pod.size());
		ASSERT_FALSE(x) << i;
		EXPECT_NE(x.error().message().find(fk::fake().calls[static_cast<size_t>(i)]),
			  std::string::npos)
			<< x.error().message();
		expect_nothing_left("export call " + std::to_string(i));
	}
	fk::reset();
	auto x = doca::pod_export::create(dev, pod.data(), pod.size());
	ASSERT_TRUE(x);
	fk::fake().fail_index = static_cast<long>(fk::fake().calls.size()) + 1; /* get_dpa_handle */
	auto m = doca::pod_import::create(dev, (*x)->descriptor());
	ASSERT_FALSE(m);
	EXPECT_NE(m.error().message().find("doca_mmap_dev_get_dpa_handle"), std::string::npos);
	x->reset();
	expect_nothing_left("import handle failing");
}

/* --dpa-backend doca: the device by PCI address, then the runtime, one TX + RX per pair */
std::vector<std::string> expected_backend(unsigned match_index, unsigned pairs)
{
	std::vector<std::string> v = {"doca_devinfo_create_list"};
	for (unsigned i = 0; i <= match_index; i++)
		v.push_back("doca_devinfo_is_equal_pci_addr");
	v.insert(v.end(), {"doca_dpa_cap_is_supported", "doca_dev_open", "doca_devinfo_destroy_list",
			   "doca_dpa_create", "doca_dpa_set_app", "doca_dpa_start",
			   "doca_dpa_mem_alloc", "doca_dpa_h2d_memcpy"});
	/* the backend's kernels have local storage (dpa_tx_state / dpa_rx_state) */
	std::vector<std::string> with_local = per_kernel;
	with_local.insert(with_local.begin() + 3, {"doca_dpa_mem_alloc", "doca_dpa_h2d_memcpy",
						   "doca_dpa_thread_set_local_storage"});
	for (unsigned k = 0; k < 2 * pairs; k++)
		v.insert(v.end(), with_local.begin(), with_local.end());
	return v;
}

TEST(DocaSequence, BackendOpensTheDeviceByPciAddressThenTheRuntime)
{
	fk::reset();
	auto b = doca::dpa_backend::create({"0000:03:00.1", 2, {}}, app, &tx_entry, &rx_entry);
	ASSERT_TRUE(b) << b.error().message();
	EXPECT_EQ(fk::fake().calls, expected_backend(1, 2));
	EXPECT_EQ((*b)->runtime().nb_kernels(), 4u);
	EXPECT_EQ((*b)->dev().pci(), "0000:03:00.1");
	EXPECT_EQ(fk::fake().live_objects, 1 + 1 + 4 * 4); /* device, DPA, 4 kernels' sets */
	const size_t made = fk::fake().calls.size();
	b->reset();
	ASSERT_GT(fk::fake().calls.size(), made);
	EXPECT_EQ(fk::fake().calls.back(), "doca_dev_close"); /* the runtime goes first */
	expect_nothing_left("backend teardown");
}

TEST(DocaSequence, BackendRefusesAMissingUnknownOrNonDpaDevice)
{
	fk::reset();
	auto none = doca::dpa_backend::create({"", 1, {}}, app, &tx_entry, &rx_entry);
	ASSERT_FALSE(none);
	EXPECT_NE(none.error().message().find("--dpa-device"), std::string::npos);
	EXPECT_TRUE(fk::fake().calls.empty());

	fk::reset();
	auto unknown = doca::dpa_backend::create({"0000:04:00.0", 1, {}}, app, &tx_entry, &rx_entry);
	ASSERT_FALSE(unknown);
	EXPECT_NE(unknown.error().message().find("0000:04:00.0: no such PCI function (3 DOCA devices"),
		  std::string::npos)
		<< unknown.error().message();
	EXPECT_EQ(fk::fake().calls.back(), "doca_devinfo_destroy_list");
	expect_nothing_left("unknown device");

	fk::reset();
	auto vf = doca::dpa_backend::create({"0000:03:00.2", 1, {}}, app, &tx_entry, &rx_entry);
	ASSERT_FALSE(vf);
	EXPECT_NE(vf.error().message().find("0000:03:00.2 cannot run a DPA process"), std::string::npos)
		<< vf.error().message();
	expect_nothing_left("device without DPA");
}

TEST(DocaSequence, EveryBackendCallFailingOnceLeavesNothing)
{
	const std::vector<std::string> seq = expected_backend(0, 1);
	for (size_t i = 0; i < seq.size(); i++) {
		fk::reset();
		fk::fake().fail_index = static_cast<long>(i);
		auto b = doca::dpa_backend::create({"0000:03:00.0", 1, {}}, app, &tx_entry, &rx_entry);
		const std::string ctx = "call " + std::to_string(i) + " (" + seq[i] + ") failing";
		if (seq[i] == "doca_devinfo_destroy_list") {
			/* a failed list release is not the backend's failure */
			EXPECT_TRUE(b) << ctx;
			b->reset();
		} else {
			ASSERT_FALSE(b) << ctx;
			EXPECT_NE(b.error().message().find(seq[i]), std::string::npos)
				<< ctx << ": " << b.error().message();
			EXPECT_NE(b.error().message().find("dpa backend doca"), std::string::npos)
				<< ctx << ": " << b.error().message();
		}
		expect_nothing_left(ctx);
	}
}

TEST(DocaSequence, NotifyNeedsTheProgramsNotifyRpc)
{
	fk::reset();
	auto rt = doca::dpa_runtime::create(dev, app, kernels, {});
	ASSERT_TRUE(rt);
	auto st = (*rt)->notify(1);
	ASSERT_FALSE(st);
	EXPECT_NE(st.message().find("DPA kernel rx: no notify RPC"), std::string::npos) << st.message();
	EXPECT_FALSE((*rt)->notify(2));
	rt->reset();
	expect_nothing_left("notify without an RPC");
}

TEST(DocaSequence, RefusesKernelsWithoutEntryPoints)
{
	fk::reset();
	auto rt = doca::dpa_runtime::create(dev, app, {{"tx", nullptr}}, {});
	ASSERT_FALSE(rt);
	EXPECT_NE(rt.error().message().find("kernel tx has no entry point"), std::string::npos);
	EXPECT_TRUE(fk::fake().calls.empty());
}

} // namespace
