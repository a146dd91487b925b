#include "UnrealNetwork.h"

#include "HAL/PlatformProcess.h"
#include "Misc/Timespan.h"
#include "SocketSubsystem.h"
#include "Sockets.h"

#include <atomic>
#include <chrono>
#include <new>

namespace
{
using Clock = std::chrono::steady_clock;

int32 RemainingMs(Clock::time_point Deadline)
{
	const auto Left = std::chrono::duration_cast<std::chrono::milliseconds>(Deadline - Clock::now()).count();
	return Left > 0 ? static_cast<int32>(Left) : 0;
}

class FUnrealStream final : public avatar_bridge::Stream
{
public:
	FUnrealStream(ISocketSubsystem* InSubsystem, FSocket* InSocket) : Subsystem(InSubsystem), Socket(InSocket) {}

	~FUnrealStream() override
	{
		Socket->Close();
		Subsystem->DestroySocket(Socket);
	}

	avatar_bridge::IoStatus read(std::uint8_t* Into, std::size_t Capacity, int TimeoutMs, std::size_t& Received) noexcept override
	{
		Received = 0;
		if (bClosed)
		{
			return avatar_bridge::IoStatus::Closed;
		}
		if (!Socket->Wait(ESocketWaitConditions::WaitForRead, FTimespan::FromMilliseconds(TimeoutMs)))
		{
			return bClosed ? avatar_bridge::IoStatus::Closed : avatar_bridge::IoStatus::Timeout;
		}
		int32 BytesRead = 0;
		const int32 Want = static_cast<int32>(FMath::Min<std::size_t>(Capacity, MAX_int32));
		if (!Socket->Recv(Into, Want, BytesRead))
		{
			return Subsystem->GetLastErrorCode() == SE_EWOULDBLOCK && !bClosed ? avatar_bridge::IoStatus::Timeout
																			   : avatar_bridge::IoStatus::Closed;
		}
		if (BytesRead <= 0)
		{
			return avatar_bridge::IoStatus::Closed;  // readable with nothing to read: the peer ended the stream
		}
		Received = static_cast<std::size_t>(BytesRead);
		return avatar_bridge::IoStatus::Ok;
	}

	avatar_bridge::IoStatus writeAll(const std::uint8_t* Data, std::size_t Size, int TimeoutMs) noexcept override
	{
		const Clock::time_point Deadline = Clock::now() + std::chrono::milliseconds(TimeoutMs);
		while (Size > 0)
		{
			if (bClosed)
			{
				return avatar_bridge::IoStatus::Closed;
			}
			int32 Sent = 0;
			const int32 Chunk = static_cast<int32>(FMath::Min<std::size_t>(Size, MAX_int32));
			if (Socket->Send(Data, Chunk, Sent) && Sent > 0)
			{
				Data += Sent;
				Size -= static_cast<std::size_t>(Sent);
				continue;
			}
			if (Subsystem->GetLastErrorCode() != SE_EWOULDBLOCK)
			{
				return avatar_bridge::IoStatus::Closed;
			}
			if (!Socket->Wait(ESocketWaitConditions::WaitForWrite, FTimespan::FromMilliseconds(RemainingMs(Deadline))))
			{
				return bClosed ? avatar_bridge::IoStatus::Closed : avatar_bridge::IoStatus::Timeout;
			}
		}
		return avatar_bridge::IoStatus::Ok;
	}

	void close() noexcept override
	{
		bClosed = true;
		Socket->Shutdown(ESocketShutdownMode::ReadWrite);  // wakes a Wait() on another thread
	}

private:
	ISocketSubsystem* Subsystem;
	FSocket* Socket;
	std::atomic<bool> bClosed{false};
};

class FUnrealNetwork final : public avatar_bridge::Network
{
public:
	std::unique_ptr<avatar_bridge::Stream> connect(const std::string& Host, int Port, int TimeoutMs, std::string& Error) noexcept override
	{
		ISocketSubsystem* Subsystem = ISocketSubsystem::Get(PLATFORM_SOCKETSUBSYSTEM);
		if (Subsystem == nullptr)
		{
			Error = "no socket subsystem";
			return nullptr;
		}
		const FAddressInfoResult Found = Subsystem->GetAddressInfo(UTF8_TO_TCHAR(Host.c_str()), *FString::FromInt(Port),
			EAddressInfoFlags::Default, NAME_None, ESocketType::SOCKTYPE_Streaming);
		if (Found.ReturnCode != SE_NO_ERROR || Found.Results.Num() == 0)
		{
			Error = "cannot resolve '" + Host + "'";
			return nullptr;
		}
		const Clock::time_point Deadline = Clock::now() + std::chrono::milliseconds(TimeoutMs);
		Error = "connect: no address answered";
		for (const FAddressInfoResultData& Candidate : Found.Results)
		{
			FSocket* Socket = Subsystem->CreateSocket(NAME_Stream, TEXT("AvatarBridge"), Candidate.Address->GetProtocolType());
			if (Socket == nullptr)
			{
				continue;
			}
			Socket->SetNonBlocking(true);
			Socket->SetNoDelay(true);
			Socket->Connect(*Candidate.Address);  // non-blocking: completes (or fails) while we wait below
			const bool bWritable = Socket->Wait(ESocketWaitConditions::WaitForWrite, FTimespan::FromMilliseconds(RemainingMs(Deadline)));
			if (bWritable && Socket->GetConnectionState() == SCS_Connected)
			{
				Error.clear();
				auto* Stream = new (std::nothrow) FUnrealStream(Subsystem, Socket);
				if (Stream == nullptr)
				{
					Subsystem->DestroySocket(Socket);
					Error = "out of memory";
				}
				return std::unique_ptr<avatar_bridge::Stream>(Stream);
			}
			Socket->Close();
			Subsystem->DestroySocket(Socket);
		}
		return nullptr;
	}
};
}  // namespace

namespace AvatarBridgeUnreal
{
std::shared_ptr<avatar_bridge::Network> MakeNetwork() noexcept
{
	return std::make_shared<FUnrealNetwork>();
}
}
